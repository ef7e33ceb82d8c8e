import json
import re

import pytest
from django.contrib.auth import authenticate
from django.core.management import call_command

from annotator.models import Query
from catalog.models import Image, Taxon
from search.facade import search
from tests.factories import database_snapshot

pytestmark = pytest.mark.django_db


def test_demo_builds_a_collection_and_reuses_it(settings, tmp_path, capsys, monkeypatch, client):
    settings.QUIRE_DATA_DIR = tmp_path
    # The production default, whose weights are not on this machine: the demo falls back.
    settings.QUIRE_CLIP_MODEL, settings.QUIRE_CLIP_PRETRAINED = "ViT-H-14-378-quickgelu", "dfn5b"
    monkeypatch.setenv("QUIRE_CLIP_PRETRAINED", "dfn5b")
    call_command("demo", "--no-serve", "--images", "60")
    out = capsys.readouterr().out
    assert "Admin login:     admin / quire-demo" in out
    # The job's number depends on the tests before (PostgreSQL does not roll sequences back).
    assert "RANDOM-WEIGHT model" in out and re.search(r"Embedding job \d+ done: 60 embedded", out)
    # The choice of model is recorded for later processes, not patched into this one's settings.
    assert settings.QUIRE_CLIP_PRETRAINED == "dfn5b"
    recorded = json.loads((tmp_path / "settings.json").read_text())
    assert recorded["QUIRE_CLIP_PRETRAINED"] == f"local-dir:{tmp_path / 'demo' / 'random-clip'}"
    monkeypatch.delenv("QUIRE_CLIP_PRETRAINED")
    settings.QUIRE_CLIP_PRETRAINED = recorded["QUIRE_CLIP_PRETRAINED"]  # what a new process reads
    assert search(text="flamingo standing on one leg", k=5)[0].image_id in range(1, 61)
    client.login(username="annotator", password="quire-demo")
    assert "rankings are meaningless until real weights are configured" in client.get("/").content.decode()
    assert Image.objects.count() == 60 and Taxon.objects.count() == 24 and Query.objects.count() == 8
    assert Image.objects.filter(taxon__isnull=True).count() == 0
    image = Image.objects.first()
    assert (tmp_path / "demo/images" / image.file_name).is_file()
    assert authenticate(username="admin", password="quire-demo").is_superuser
    before = database_snapshot()

    call_command("demo", "--no-serve", "--images", "60")

    assert database_snapshot() == before
