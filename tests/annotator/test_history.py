"""A history nothing can erase: every path that deletes or changes a label leaves events that explain
the labels as they are, and nothing deletes an event or what it describes."""

import json

import pytest
from django.contrib.auth.models import User
from django.db.models import ProtectedError

from annotator import labels
from annotator.inquire.importers import import_annotations, import_queries
from annotator.models import ImportBatch, Label, LabelEvent, LabelSource, Query
from catalog.importers import import_inat
from catalog.models import Image
from tests.factories import database_snapshot, inat_document

pytestmark = pytest.mark.django_db


def replayed(query_id=None) -> dict[tuple[int, int], str]:
    """The labels the history says there are: every event applied in order."""
    state: dict[tuple[int, int], str] = {}
    events = LabelEvent.objects.order_by("id")
    if query_id is not None:
        events = events.filter(query_id=query_id)
    for event in events:
        key = (event.query_id, event.image_id)
        assert state.get(key, "") == event.old_value, f"event {event.pk} does not follow from the one before"
        if event.new_value:
            state[key] = event.new_value
        else:
            state.pop(key, None)
    return state


def stored(query_id=None) -> dict[tuple[int, int], str]:
    found = Label.objects.all() if query_id is None else Label.objects.filter(query_id=query_id)
    return {(label.query_id, label.image_id): label.value for label in found}


@pytest.fixture
def project(write_json):
    import_inat(write_json(inat_document(images=5)))
    query = Query.objects.create(text="Black Skimmer performing skimming")
    ann = User.objects.create_user("ann", password="pw-ann-1")
    labels.set_label(query_id=query.pk, image_id=1000, value="relevant", user=ann, source="click")
    labels.set_label(query_id=query.pk, image_id=1001, value="not_relevant", user=ann, source="keyboard")
    labels.set_label(query_id=query.pk, image_id=1001, value="unsure", user=ann, source="keyboard")
    return {"query": query, "ann": ann}


def test_a_query_with_a_history_cannot_be_deleted(project):
    query = project["query"]
    before = database_snapshot()
    with pytest.raises(ProtectedError, match="LabelEvent.query|Label.query"):
        query.delete()
    with pytest.raises(ProtectedError):
        Query.objects.filter(pk=query.pk).delete()
    assert database_snapshot() == before
    assert replayed() == stored() and len(stored()) == 2


def test_a_query_without_labels_can_still_be_deleted(project):
    typo = Query.objects.create(text="Black Skimmmer")
    typo.delete()
    assert not Query.objects.filter(pk=typo.pk).exists()


def test_images_and_users_with_a_history_cannot_be_deleted(project):
    with pytest.raises(ProtectedError):
        Image.objects.get(pk=1000).delete()
    with pytest.raises(ProtectedError):
        project["ann"].delete()
    assert LabelEvent.objects.filter(user=project["ann"]).count() == 3


def test_a_label_deleted_in_the_admin_is_cleared_with_an_event(project, admin_client):
    query = project["query"]
    label = Label.objects.get(query=query, image_id=1000)
    page = admin_client.get(f"/admin/annotator/label/{label.pk}/delete/")
    assert page.status_code == 200
    response = admin_client.post(f"/admin/annotator/label/{label.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    assert not Label.objects.filter(pk=label.pk).exists()
    event = LabelEvent.objects.latest("id")
    assert (event.image_id, event.old_value, event.new_value, event.source) == (1000, "relevant", "", "admin")
    assert event.user.username == "admin"
    assert replayed() == stored()


def test_labels_deleted_in_bulk_in_the_admin_each_leave_an_event(project, admin_client):
    ids = list(Label.objects.values_list("pk", flat=True))
    response = admin_client.post(
        "/admin/annotator/label/", {"action": "delete_selected", "_selected_action": ids, "post": "yes"}
    )
    assert response.status_code == 302
    assert not Label.objects.exists()
    assert sorted(LabelEvent.objects.filter(source="admin").values_list("image_id", "old_value")) == [
        (1000, "relevant"),
        (1001, "unsure"),
    ]
    assert replayed() == stored() == {}


def test_a_label_deleted_through_the_api_leaves_an_event(project, client):
    client.force_login(project["ann"])
    label = Label.objects.get(image_id=1001)
    assert client.delete(f"/api/labels/{label.pk}/").status_code == 204
    event = LabelEvent.objects.latest("id")
    assert (event.old_value, event.new_value, event.source, event.user) == ("unsure", "", "api", project["ann"])
    assert replayed() == stored()


def test_label_rows_cannot_be_written_behind_the_history(project):
    label = Label.objects.get(image_id=1000)
    label.value = "not_relevant"
    with pytest.raises(TypeError, match="use annotator.labels"):
        label.save()
    with pytest.raises(TypeError, match="use annotator.labels"):
        label.delete()
    with pytest.raises(TypeError, match="use annotator.labels"):
        Label.objects.filter(pk=label.pk).update(value="not_relevant")
    with pytest.raises(TypeError, match="use annotator.labels"):
        Label.objects.all().delete()
    with pytest.raises(TypeError, match="use annotator.labels"):
        Label.objects.bulk_create([Label(query=project["query"], image_id=1002, value="relevant")])
    assert replayed() == stored()
    assert stored()[(project["query"].pk, 1000)] == "relevant"


def test_clear_label_checks_its_source(project):
    with pytest.raises(ValueError, match="'shell' is not a label source"):
        labels.clear_label(query_id=project["query"].pk, image_id=1000, source="shell")
    assert Label.objects.filter(image_id=1000).exists()


def test_the_page_records_how_long_the_annotator_looked(project, client):
    client.force_login(project["ann"])
    url = f"/queries/{project['query'].pk}/labels"
    body = {"image": 1002, "value": "relevant", "source": "keyboard", "lead_time_ms": 2700}
    assert client.post(url, json.dumps(body), content_type="application/json").status_code == 200
    assert LabelEvent.objects.latest("id").lead_time_ms == 2700
    before = database_snapshot()
    for bad in (-1, 1.5, "2700", True, 2**40):
        response = client.post(url, json.dumps({**body, "lead_time_ms": bad}), content_type="application/json")
        assert response.status_code == 400 and "lead_time_ms" in response.json()["error"]
    assert database_snapshot() == before


def test_an_import_is_recorded_on_every_event_it_writes(project, tmp_path):
    queries = tmp_path / "inquire_queries_val.csv"
    queries.write_text(
        ",query_id,query_text,supercategory,category,iconic_group\n0,9,skimming,Behavior,Feeding,Birds\n"
    )
    import_queries(queries)
    annotations = tmp_path / "inquire_annotations.csv"
    annotations.write_text(
        "query_id,image_id,image_path\n"
        f"9,1000,{Image.objects.get(pk=1000).file_name}\n"
        f"9,1002,{Image.objects.get(pk=1002).file_name}\n"
    )
    import_annotations(annotations)
    batch = ImportBatch.objects.get()
    assert (batch.kind, batch.rows, batch.labels_changed, batch.file_name) == (
        "inquire_annotations",
        2,
        2,
        str(annotations),
    )
    assert set(batch.events.values_list("image_id", "source")) == {(1000, LabelSource.IMPORT), (1002, "import")}
    assert LabelEvent.objects.filter(source="click").get().import_batch is None
    with pytest.raises(ProtectedError):
        batch.delete()
    assert replayed() == stored()
