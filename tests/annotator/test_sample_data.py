"""`manage.py sample_data`: what the deployment's smoke test and README use to try a stack with no real data."""

import io

import pytest
from django.core.management import CommandError, call_command

pytestmark = pytest.mark.django_db


def test_sample_data_writes_a_collection_and_a_model_that_import_and_load(tmp_path, settings):
    from catalog.models import Image
    from search.spec import ClipSpec

    out = io.StringIO()
    call_command("sample_data", str(tmp_path / "sample"), "--images", "12", stdout=out)
    assert "Wrote 12 images" in out.getvalue()
    call_command(
        "import_inat", str(tmp_path / "sample" / "inat.json"), "--images-root", str(tmp_path / "sample" / "images")
    )
    assert Image.objects.count() == 12
    from search.clip import check_weights

    check_weights(ClipSpec(settings.QUIRE_CLIP_MODEL, f"local-dir:{tmp_path / 'sample' / 'random-clip'}"))
    with pytest.raises(CommandError, match="exists already"):
        call_command("sample_data", str(tmp_path / "sample"))
    with pytest.raises(CommandError, match="between 1 and"):
        call_command("sample_data", str(tmp_path / "other"), "--images", "0")
