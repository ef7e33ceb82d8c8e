"""One reader of label changes (annotator.labels.changes) for the labeling page and the API: a bad item planted in a
batch is refused by both with the same sentence, and nothing is written."""

import pytest

from annotator.labels.changes import NOT_A_LIST
from tests.factories import database_snapshot, signed_in

pytestmark = pytest.mark.django_db


@pytest.fixture
def both(client, write_json):
    _, api = signed_in(client, write_json, images=6, query_id=4)
    return client, api


GOOD = {"image": 1000, "value": "relevant"}


@pytest.mark.parametrize(
    "planted, sentence",
    [
        ({"image": 1001, "value": "maybe"}, "labels[1]: value: "),
        ({"image": 1.5, "value": "relevant"}, "labels[1]: image: Must be an image id (a whole number), not 1.5."),
        ({"image": 1001, "value": "relevant", "lead_time_ms": "2700"}, "labels[1]: lead_time_ms: "),
        ({"image": 999999, "value": "relevant"}, "No image 999999 in the collection."),
        ("relevant", "labels[1]: non_field_errors: "),
    ],
)
def test_a_planted_bad_item_is_refused_by_the_page_and_the_api_in_the_same_words(both, planted, sentence):
    page_client, api = both
    before = database_snapshot()
    batch = [GOOD, planted]
    page = page_client.post("/queries/4/labels", {"labels": batch, "source": "click"}, content_type="application/json")
    by_api = api.post("/api/queries/4/labels/", {"labels": batch}, format="json")
    assert page.status_code in (400, 404) and by_api.status_code == 400
    assert page.json()["error"] == by_api.json()["detail"]
    assert page.json()["error"].startswith(sentence)
    assert database_snapshot() == before


def test_the_page_and_the_api_refuse_a_batch_that_is_empty_or_no_list_alike(both):
    page_client, api = both
    for batch in ([], "relevant"):
        page = page_client.post("/queries/4/labels", {"labels": batch}, content_type="application/json")
        by_api = api.post("/api/queries/4/labels/", {"labels": batch}, format="json")
        assert page.json()["error"] == by_api.json()["detail"] == NOT_A_LIST
