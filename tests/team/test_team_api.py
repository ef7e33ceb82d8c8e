"""The API as each annotator, blind overlap in the candidates API, adjudication and its refusals, exports."""

import csv
import json

import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from annotator.inquire.exporters import export_inquire
from annotator.labels import LabelChange, set_labels
from annotator.labels.sealed import seen_by
from annotator.models import Judgment, Label, LabelEvent, OverlapImage, Query
from annotator.team.overlap import draw_sample, open_sample
from catalog.importers import import_inat
from search.facade import search
from tests.factories import inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def team(write_json):
    import_inat(write_json(inat_document(images=8)))
    Query.objects.create(id=7, text="Black Skimmer performing skimming")
    users = {name: User.objects.create_user(name, password="pw") for name in ("ann", "bob", "judge")}
    users["judge"].user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    return users


def client_of(user) -> APIClient:
    client = APIClient()
    client.force_authenticate(User.objects.get(pk=user.pk))  # fresh: permissions are cached per object
    return client


def snapshot():
    return (
        sorted(Judgment.objects.values_list("query_id", "image_id", "annotator_id", "value")),
        sorted(Label.objects.values_list("query_id", "image_id", "value", "decided_by")),
        LabelEvent.objects.count(),
    )


def post_labels(user, labels):
    return client_of(user).post("/api/queries/7/labels/", {"labels": labels}, format="json")


def test_the_api_writes_each_users_own_judgments(team):
    assert post_labels(team["ann"], [{"image": 1000, "value": "relevant"}]).status_code == 200
    assert post_labels(team["bob"], [{"image": 1000, "value": "not_relevant"}]).status_code == 200
    assert dict(Judgment.objects.values_list("annotator__username", "value")) == {
        "ann": "relevant",
        "bob": "not_relevant",
    }
    assert Label.objects.get(image_id=1000).value == "undecided"
    # Ann clearing her label leaves Bob's: his is now the single vote.
    assert post_labels(team["ann"], [{"image": 1000, "value": ""}]).json()["written"] == 1
    assert (Label.objects.get(image_id=1000).value, Label.objects.get(image_id=1000).annotator) == (
        "not_relevant",
        team["bob"],
    )


def test_a_second_annotator_gets_the_overlap_sample_unlabeled(labeling):
    query, ann = labeling["query"], labeling["annotator"]
    bob, judge = User.objects.create(username="bob"), User.objects.create(username="cy")
    top = [hit.image_id for hit in search(text=query.text, k=10)]
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in top], user=ann, source="keyboard")
    assert draw_sample(query, fraction=0.5) == 5
    query.refresh_from_db()
    sample = set(OverlapImage.objects.values_list("image_id", flat=True))
    assert set(seen_by(query, bob)) == set(top) - sample  # the sample, unlabeled for him
    assert set(seen_by(query, ann)) == set(top)  # her own, all of them
    found = {
        row["image_id"] for row in client_of(bob).get(f"/api/queries/{query.pk}/candidates/?k=20").json()["results"]
    }
    assert sample <= found and not (set(top) - sample) & found  # offered to Bob as unlabeled, the rest not
    # Once Bob has judged an image of the sample it has its two judgments, and it stays sealed: each judge sees
    # their own vote, anyone else nothing, until staff open the sample (or an adjudicator decides it).
    first = min(sample)
    set_labels(query_id=query.pk, changes=[LabelChange(first, "not_relevant")], user=bob, source="keyboard")
    assert first not in seen_by(query, judge)
    assert seen_by(query, ann)[first] == "relevant" and seen_by(query, bob)[first] == "not_relevant"
    assert open_sample(query) == (1, 4)  # the images still waiting for Bob stay sealed
    assert seen_by(query, judge)[first] == "undecided"
    assert seen_by(query, ann)[first] == "relevant"  # a judge sees their own judgment, opened or not
    # Drawing again does not grow a sample that already holds its share.
    assert draw_sample(query, fraction=0.5) == 0


def test_disagreements_and_adjudication(team):
    post_labels(team["ann"], [{"image": 1000, "value": "relevant"}, {"image": 1001, "value": "relevant"}])
    post_labels(team["bob"], [{"image": 1000, "value": "not_relevant"}, {"image": 1001, "value": "relevant"}])
    refused = client_of(team["ann"]).get("/api/queries/7/disagreements/")  # every vote by name: adjudicators'
    assert refused.status_code == 403 and "can adjudicate" in refused.json()["detail"]
    listed = client_of(team["judge"]).get("/api/queries/7/disagreements/").json()
    assert listed == {
        "results": [
            {
                "image": 1000,
                "judgments": [{"annotator": "ann", "value": "relevant"}, {"annotator": "bob", "value": "not_relevant"}],
                "final": "undecided",
                "decided_by": "undecided",
                "reason": "disagreement",
            }
        ]
    }
    before = snapshot()
    refused = client_of(team["ann"]).post("/api/queries/7/adjudicate/", {"image": 1000, "value": "relevant"})
    assert refused.status_code == 403 and "can adjudicate" in refused.json()["detail"]
    assert snapshot() == before

    decided = client_of(team["judge"]).post("/api/queries/7/adjudicate/", {"image": 1000, "value": "relevant"})
    assert decided.status_code == 200 and decided.json()["decided_by"] == "adjudicated"
    label = Label.objects.get(query_id=7, image_id=1000)
    assert (label.value, label.annotator) == ("relevant", team["judge"])
    event = LabelEvent.objects.latest("id")
    assert (event.source, event.old_value, event.new_value, event.user, event.annotator) == (
        "adjudication", "undecided", "relevant", team["judge"], None,
    )  # fmt: skip
    # The decision holds when a judgment changes later; the queue's pending list no longer shows it.
    post_labels(team["bob"], [{"image": 1000, "value": "unsure"}])
    assert Label.objects.get(query_id=7, image_id=1000).value == "relevant"
    assert client_of(team["judge"]).get("/api/queries/7/disagreements/?pending=1").json() == {"results": []}


@pytest.mark.parametrize(
    "url, body, status, message",
    [
        ("/api/queries/7/adjudicate/", {"image": 1001, "value": "relevant"}, 409, "judgments agree"),
        ("/api/queries/7/adjudicate/", {"image": 1002, "value": "relevant"}, 409, "nobody has judged it"),
        ("/api/queries/7/adjudicate/", {"image": 1000, "value": "maybe"}, 400, "maybe"),
        ("/api/queries/7/adjudicate/", {"image": 1000, "value": ""}, 400, ""),
        ("/api/queries/7/adjudicate/", {"image": "1000\x00", "value": "relevant"}, 400, "image id"),
        ("/api/queries/7/adjudicate/", {"image": 2**70, "value": "relevant"}, 400, "image id"),
        ("/api/queries/7/adjudicate/", {"image": 99999, "value": "relevant"}, 404, "No image 99999"),
        ("/api/queries/99/adjudicate/", {"image": 1000, "value": "relevant"}, 404, ""),
        ("/api/queries/99/disagreements/", None, 404, ""),
    ],
)
def test_bad_adjudications_are_refused_and_change_nothing(team, url, body, status, message):
    post_labels(team["ann"], [{"image": 1000, "value": "relevant"}, {"image": 1001, "value": "relevant"}])
    post_labels(team["bob"], [{"image": 1000, "value": "not_relevant"}, {"image": 1001, "value": "relevant"}])
    before = snapshot()
    judge = client_of(team["judge"])
    response = judge.post(url, body, format="json") if body is not None else judge.get(url)
    assert response.status_code == status
    assert message in json.dumps(response.json())
    assert snapshot() == before


def test_exports_carry_the_final_labels_and_every_judgment(team, tmp_path):
    post_labels(team["ann"], [{"image": 1000, "value": "relevant"}, {"image": 1001, "value": "relevant"}])
    post_labels(team["bob"], [{"image": 1000, "value": "not_relevant"}, {"image": 1001, "value": "relevant"}])
    counts = export_inquire(tmp_path)
    assert counts["inquire_judgments.csv"] == 4
    rows = list(csv.reader((tmp_path / "inquire_judgments.csv").open()))
    assert rows[0] == ["query_id", "image_id", "annotator", "label", "source", "lead_time_ms", "updated_at"]
    assert [row[:5] for row in rows[1:]] == [
        ["7", "1000", "ann", "relevant", "api"],
        ["7", "1000", "bob", "not_relevant", "api"],
        ["7", "1001", "ann", "relevant", "api"],
        ["7", "1001", "bob", "relevant", "api"],
    ]
    # The benchmark files carry the final labels: the undecided image is not relevant in the annotations.
    annotations = list(csv.reader((tmp_path / "inquire_annotations.csv").open()))
    assert [row[:2] for row in annotations[1:]] == [["7", "1001"]]
    labels = {row[1]: row[3] for row in csv.reader((tmp_path / "inquire_labels.csv").open())}
    assert labels["1000"] == "undecided" and labels["1001"] == "relevant"
    figures = json.loads((tmp_path / "agreement.json").read_text())
    assert figures["queries"]["7"]["items"] == 2 and figures["queries"]["7"]["percent_agreement"] == 0.5


def test_overlap_settings_are_checked(team):
    query = Query.objects.get(pk=7)
    for bad in ({"fraction": 1.5}, {"fraction": float("nan")}, {"fraction": 0.1, "wanted": 4}, {"top": 0}):
        with pytest.raises(ValueError):
            draw_sample(query, **bad)
    assert not OverlapImage.objects.exists()
