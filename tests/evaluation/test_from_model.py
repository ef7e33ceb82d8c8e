import json

import pytest
from django.core.management import call_command

from annotator.labels import set_label
from annotator.models import LabelSource, LabelValue, Query
from search.facade import search
from tests.factories import make_collection

pytestmark = pytest.mark.django_db


def test_scoring_the_configured_model_on_the_database_labels(tiny_settings, tmp_path):
    make_collection(tmp_path / "images", 30)
    call_command("embed")
    query = Query.objects.create(text="a red bird", supercategory="Appearance")
    top = [hit.image_id for hit in search(text="a red bird", k=30)]
    for image_id in (top[0], top[2]):
        set_label(query_id=query.pk, image_id=image_id, value=LabelValue.RELEVANT, source=LabelSource.API)
    set_label(query_id=query.pk, image_id=top[1], value=LabelValue.NOT_RELEVANT, source=LabelSource.API)
    call_command("evaluate", "--from-model", "--k", "5", "--group-by", "supercategory", "--json", tmp_path / "r.json")
    report = json.loads((tmp_path / "r.json").read_text())
    assert report["overall"]["ap"] == pytest.approx((1 + 2 / 3) / 2)
    assert report["groups"]["supercategory"]["Appearance"]["queries"] == 1
