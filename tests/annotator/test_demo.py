import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from annotator.models import Image, Query, Taxon
from tests.conftest import database_snapshot

pytestmark = pytest.mark.django_db


def test_demo_builds_a_collection_and_reuses_it(settings, tmp_path, capsys):
    settings.QUIRE_DATA_DIR = tmp_path
    call_command("demo", "--no-serve", "--images", "60")
    out = capsys.readouterr().out
    assert "Admin login:     admin / quire-demo" in out
    assert Image.objects.count() == 60 and Taxon.objects.count() == 24 and Query.objects.count() == 8
    assert Image.objects.filter(taxon__isnull=True).count() == 0
    image = Image.objects.first()
    assert (tmp_path / "demo/images" / image.file_name).is_file()
    assert authenticate(username="admin", password="quire-demo").is_superuser
    before = database_snapshot()

    call_command("demo", "--no-serve", "--images", "60")

    assert database_snapshot() == before
