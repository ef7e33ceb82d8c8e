import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotator.models import Query
from tests.search.conftest import make_collection, tiny_model_dir, tiny_settings  # noqa: F401  (shared fixtures)


@pytest.fixture
def labeling(tiny_settings, tmp_path):  # noqa: F811
    """A collection of 120 embedded and indexed images, a query, an annotator and an admin."""
    make_collection(tmp_path / "images", 120)
    call_command("embed")
    query = Query.objects.create(text="Black Skimmer performing skimming", supercategory="Birds", category="Feeding")
    User = get_user_model()
    annotator = User.objects.create_user("ann", password="pw-ann-1")
    admin = User.objects.create_superuser("boss", "boss@example.org", "pw-boss-1")
    return {"query": query, "annotator": annotator, "admin": admin, "images": tmp_path / "images"}
