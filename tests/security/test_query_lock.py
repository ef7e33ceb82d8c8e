"""Issue 27 (high): a locked query refuses every annotator write, whichever path it comes by, and an annotator
removes only their own labels. The rule lives in annotator.labels, where every write happens."""

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse
from rest_framework.test import APIClient

from annotator.labels import LabelRefused, clear_label, label_unlabeled, set_label, set_labels_in_bulk
from annotator.models import Query
from catalog.importers import import_inat
from catalog.models import Image
from tests.factories import database_snapshot, inat_document

pytestmark = pytest.mark.django_db

LOCKED = "locked by staff"


@pytest.fixture
def world(write_json):
    import_inat(write_json(inat_document(images=6)))
    query = Query.objects.create(id=5, text="Black Skimmer performing skimming")
    ann = User.objects.create_user("ann", password="pw-ann-1")
    staff = User.objects.create_user("boss", password="pw-boss-1", is_staff=True)
    staff.user_permissions.add(Permission.objects.get(codename="change_query"))
    staff = User.objects.get(pk=staff.pk)
    ids = list(Image.objects.order_by("pk").values_list("pk", flat=True))
    set_label(query_id=5, image_id=ids[0], value="relevant", user=staff, source="click")
    set_label(query_id=5, image_id=ids[1], value="not_relevant", user=ann, source="click")
    Query.objects.filter(pk=5).update(locked=True)
    return {"query": query, "ann": ann, "staff": staff, "ids": ids}


def api_as(user):
    client = APIClient()
    client.force_authenticate(user)
    return client


def test_every_api_write_on_a_locked_query_is_refused_and_changes_nothing(world):
    api = api_as(world["ann"])
    ids = world["ids"]
    label_id = world["query"].labels.get(image_id=ids[0]).pk
    before = database_snapshot()
    attempts = [
        api.post("/api/labels/", {"query": 5, "image": ids[2], "value": "relevant"}, format="json"),
        api.post("/api/queries/5/labels/", {"labels": [{"image": ids[2], "value": "relevant"}]}, format="json"),
        api.patch(f"/api/labels/{label_id}/", {"value": "not_relevant"}, format="json"),
        api.put(f"/api/labels/{label_id}/", {"value": "not_relevant"}, format="json"),
        api.delete(f"/api/labels/{label_id}/"),
    ]
    for response in attempts:
        assert response.status_code == 403, (response.request["REQUEST_METHOD"], response.content)
        assert LOCKED in response.json()["detail"]
    assert database_snapshot() == before


def test_the_pages_writes_on_a_locked_query_are_refused(client, world):
    client.force_login(world["ann"])
    ids = world["ids"]
    before = database_snapshot()
    save = client.post(
        reverse("save-label", args=[5]),
        {"labels": [{"image": ids[2], "value": "relevant"}]},
        content_type="application/json",
    )
    submit = client.post(reverse("submit", args=[5]), {"images": ids[2:4]}, content_type="application/json")
    rerank = client.post(reverse("start-rerank", args=[5]), {"method": "yesno"})
    assert (save.status_code, submit.status_code, rerank.status_code) == (403, 403, 403)
    assert LOCKED in save.json()["error"] and LOCKED in submit.json()["error"] and LOCKED in rerank.content.decode()
    assert database_snapshot() == before


def test_the_write_functions_themselves_refuse(world):
    ann, ids = world["ann"], world["ids"]
    before = database_snapshot()
    for write in (
        lambda: set_label(query_id=5, image_id=ids[2], value="relevant", user=ann, source="api"),
        lambda: clear_label(query_id=5, image_id=ids[1], user=ann, source="api"),
        lambda: set_labels_in_bulk([(5, ids[2]), (5, ids[3])], value="relevant", user=ann, source="api"),
        lambda: label_unlabeled(5, ids[2:4], value="not_relevant", user=ann, source="submit"),
    ):
        with pytest.raises(LabelRefused, match=LOCKED):
            write()
    assert database_snapshot() == before


def test_staff_and_the_system_still_write_a_locked_query(world):
    api, ids = api_as(world["staff"]), world["ids"]
    assert (
        api.post("/api/labels/", {"query": 5, "image": ids[2], "value": "relevant"}, format="json").status_code == 201
    )
    # An import or an operator's command has no user: the lock is for annotators.
    assert set_labels_in_bulk([(5, ids[3])], value="relevant", source="import") == 1


def test_an_annotator_removes_only_their_own_labels(world):
    Query.objects.filter(pk=5).update(locked=False)
    api, ids = api_as(world["ann"]), world["ids"]
    theirs = world["query"].labels.get(image_id=ids[0]).pk  # staff's
    mine = world["query"].labels.get(image_id=ids[1]).pk
    before = database_snapshot()
    # Deleting staff's label would remove ann's own judgment of it, which she has none of: 404, nothing changes.
    refused = api.delete(f"/api/labels/{theirs}/")
    assert refused.status_code == 404 and "You have no judgment of image" in refused.json()["detail"]
    assert database_snapshot() == before
    assert api.delete(f"/api/labels/{mine}/").status_code == 204
    assert api_as(world["staff"]).delete(f"/api/labels/{theirs}/").status_code == 204
    assert not world["query"].labels.filter(pk__in=[theirs, mine]).exists()


def test_a_locked_query_numbered_0_is_locked_too(world):
    """INQUIRE-style files may number a query 0; the check must not read that id as "none locked"."""
    Query.objects.create(id=0, text="Query zero", locked=True)
    with pytest.raises(LabelRefused, match="Query 0 is marked done"):
        set_label(query_id=0, image_id=world["ids"][2], value="relevant", user=world["ann"], source="api")
    assert not Query.objects.get(pk=0).labels.exists()
