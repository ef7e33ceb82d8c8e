import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotator.labels import set_label
from annotator.models import Judgment, Label, LabelEvent, Query
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(write_json):
    import_inat(write_json(inat_document(images=7)))
    Query.objects.create(id=7, text="Black Skimmer performing skimming", split="val")
    Query.objects.create(id=8, text="Puffin with fish", split="test", status="done")
    client = APIClient()
    client.force_authenticate(User.objects.create(username="ann"))
    return client


def test_everything_needs_a_login(write_json):
    client = APIClient()
    for url in ["/api/queries/", "/api/taxa/", "/api/images/", "/api/labels/", "/api/schema/"]:
        assert client.get(url).status_code in (401, 403), url


def test_tokens_work_for_scripts(api):
    from annotator.api.tokens import new_token

    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Token {new_token(User.objects.create_user('script'))}")
    assert client.get("/api/queries/").status_code == 200


def test_openapi_schema_describes_the_endpoints(api):
    response = api.get("/api/schema/", HTTP_ACCEPT="application/json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    for path in ["/api/queries/", "/api/taxa/", "/api/images/", "/api/labels/", "/api/labels/{id}/"]:
        assert path in schema["paths"], path
    assert "post" in schema["paths"]["/api/labels/"] and "post" not in schema["paths"]["/api/queries/"]


def test_queries_list_and_filter(api):
    data = api.get("/api/queries/?split=test").json()
    assert [(q["query_id"], q["status"]) for q in data["results"]] == [(8, "done")]
    assert api.get("/api/queries/7/").json()["text"] == "Black Skimmer performing skimming"
    assert api.get("/api/queries/999/").status_code == 404


def test_taxa_search_by_common_or_scientific_name(api):
    assert [t["id"] for t in api.get("/api/taxa/?search=puffin").json()["results"]] == [11]
    assert [t["id"] for t in api.get("/api/taxa/?search=rynchops").json()["results"]] == [10]


def test_images_page_by_cursor_and_filter_by_taxon(api):
    first = api.get("/api/images/?page_size=4").json()
    assert [i["id"] for i in first["results"]] == [1000, 1001, 1002, 1003]
    rest = api.get(first["next"]).json()
    assert [i["id"] for i in rest["results"]] == [1004, 1005, 1006]
    assert [i["id"] for i in api.get("/api/images/?taxon=10").json()["results"]] == [1000, 1003]
    response = api.get("/api/images/?taxon=birds")
    assert response.status_code == 400 and "whole number" in response.json()["taxon"]


def test_posting_a_label_creates_then_changes_it(api):
    created = api.post("/api/labels/", {"query": 7, "image": 1000, "value": "relevant"}, format="json")
    assert created.status_code == 201
    assert created.json()["annotator"] == "ann"
    changed = api.post("/api/labels/", {"query": 7, "image": 1000, "value": "unsure"}, format="json")
    assert changed.status_code == 200 and changed.json()["value"] == "unsure"
    assert list(LabelEvent.objects.values_list("old_value", "new_value", "source")) == [
        ("", "relevant", "api"),
        ("relevant", "unsure", "api"),
    ]


def test_patch_and_delete_a_label(api):
    ann = User.objects.get(username="ann")
    label, _ = set_label(query_id=7, image_id=1001, value="relevant", user=ann, source="click")
    assert (
        api.patch(f"/api/labels/{label.id}/", {"value": "not_relevant"}, format="json").json()["value"]
        == "not_relevant"
    )
    assert api.delete(f"/api/labels/{label.id}/").status_code == 204
    assert api.get(f"/api/labels/{label.id}/").status_code == 404
    assert list(LabelEvent.objects.values_list("new_value", flat=True)) == ["relevant", "not_relevant", ""]


def test_patching_anothers_label_adds_a_judgment_beside_it(api):
    label, _ = set_label(query_id=7, image_id=1001, value="relevant", source="import")
    patched = api.patch(f"/api/labels/{label.id}/", {"value": "not_relevant"}, format="json").json()
    assert (patched["value"], patched["decided_by"]) == ("undecided", "undecided")  # one vote each
    assert sorted(Judgment.objects.values_list("value", flat=True)) == ["not_relevant", "relevant"]
    assert api.delete(f"/api/labels/{label.id}/").status_code == 204  # ann's own judgment goes
    assert Label.objects.get(pk=label.id).value == "relevant"


def test_labels_filter_by_query_and_value(api):
    set_label(query_id=7, image_id=1000, value="relevant", source="click")
    set_label(query_id=7, image_id=1001, value="not_relevant", source="click")
    set_label(query_id=8, image_id=1000, value="relevant", source="click")
    rows = api.get("/api/labels/?query=7&value=relevant").json()["results"]
    assert [(r["query"], r["image"]) for r in rows] == [(7, 1000)]


@pytest.mark.parametrize(
    "body, field, message",
    [
        ({"query": 7, "image": 4242, "value": "relevant"}, "image", "does not exist"),
        ({"query": 99, "image": 1000, "value": "relevant"}, "query", "does not exist"),
        ({"query": 7, "image": 1000, "value": "maybe"}, "value", "is not a valid choice"),
        ({"query": "seven", "image": 1000, "value": "relevant"}, "query", "Incorrect type"),
        ({"image": 1000, "value": "relevant"}, "query", "required"),
    ],
)
def test_bad_label_requests_say_what_to_fix_and_write_nothing(api, body, field, message):
    response = api.post("/api/labels/", body, format="json")
    if message == "does not exist":  # a well-formed id of nothing: 404, as the per-query routes answer (issue 63)
        assert response.status_code == 404 and f"{field}: " in response.json()["detail"]
        assert message in response.json()["detail"]
    else:
        assert response.status_code == 400
        assert message in " ".join(response.json()[field])
    assert not LabelEvent.objects.exists()


def test_catalog_endpoints_are_read_only(api):
    assert api.post("/api/queries/", {"text": "x"}, format="json").status_code == 405
    assert api.delete("/api/images/1000/").status_code == 405


def test_removing_a_judgment_you_do_not_have_is_404_and_removes_nothing(labeling):
    """Issue 63: DELETE answered 204 when the caller had no judgment of the image (someone else's label)."""
    query, ann = labeling["query"], labeling["annotator"]
    image = Label.objects.model._meta.get_field("image").related_model.objects.order_by("pk").first()
    set_label(query_id=query.pk, image_id=image.pk, value="relevant", user=ann, source="api")
    label = Label.objects.get(query=query, image=image)
    bob = User.objects.create_user("bob", password="pw")
    bob_api = APIClient()
    bob_api.force_authenticate(bob)
    answer = bob_api.delete(f"/api/labels/{label.pk}/")
    assert answer.status_code == 404 and "You have no judgment of image" in answer.json()["detail"]
    assert Judgment.objects.filter(query=query, image=image).count() == 1
    ann_api = APIClient()
    ann_api.force_authenticate(ann)
    assert ann_api.delete(f"/api/labels/{label.pk}/").status_code == 204
    assert not Judgment.objects.filter(query=query, image=image).exists()


def test_a_completeness_share_given_as_text_is_refused_by_both_draws(labeling):
    """Issue 63: the per-query POST took "0.9" as text where the benchmark POST refused it; both refuse it now (the
    side pane's form still reads its text fields as numbers)."""
    staff = APIClient()
    staff.force_authenticate(labeling["admin"])
    query = labeling["query"]
    for path in (f"/api/queries/{query.pk}/completeness/", "/api/completeness/benchmark/"):
        answer = staff.post(path, {"target_recall": "0.9", "dry_run": True}, format="json")
        assert answer.status_code == 400, (path, answer.content)
        assert '"target_recall" must be a number' in str(answer.json()), path


def test_a_bad_query_in_the_team_report_is_refused_before_anything_else(labeling):
    api = APIClient()
    api.force_authenticate(labeling["annotator"])
    for value in ("null", "-3", "x"):
        answer = api.get("/api/team/annotators/", {"query": value})
        assert answer.status_code == 400 and "must be a query id" in str(answer.json()), value


def test_an_empty_choice_is_refused_not_read_as_any(labeling):
    """Issue 63: `?status=` and `?strategy=` were accepted as "any" though the schema's enum does not list "": the
    parameter is left out for any value."""
    api = APIClient()
    api.force_authenticate(labeling["annotator"])
    query = labeling["query"]
    for path, name in (
        ("/api/queries/?status=", "status"),
        ("/api/queries/?split=", "split"),
        (f"/api/queries/{query.pk}/map/scores/?strategy=", "strategy"),
        (f"/api/queries/{query.pk}/candidates/?strategy=", "strategy"),
        ("/api/labels/?value=", "value"),
    ):
        answer = api.get(path)
        assert answer.status_code == 400 and "leave it out for any" in str(answer.json()[name]), path
    assert api.get("/api/queries/").status_code == 200
