"""The adjudication queue, the agreement page, the dashboard's team panel and `manage.py overlap`."""

from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.test import Client

from annotator.labels import LabelChange, set_labels
from annotator.models import Assignment, Label, LabelEvent, OverlapImage, Query
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def split(write_json):
    """Query 7: ann and bob disagree on image 1000 and agree on 1001."""
    import_inat(write_json(inat_document(images=4)))
    Query.objects.create(id=7, text="Black Skimmer performing skimming")
    ann, bob = User.objects.create_user("ann", password="pw"), User.objects.create_user("bob", password="pw")
    set_labels(
        query_id=7, changes=[LabelChange(1000, "relevant"), LabelChange(1001, "relevant")], user=ann, source="click"
    )
    set_labels(
        query_id=7, changes=[LabelChange(1000, "not_relevant"), LabelChange(1001, "relevant")], user=bob, source="click"
    )
    judge = User.objects.create_user("judge", password="pw", is_staff=True)
    judge.user_permissions.add(*Permission.objects.filter(codename__in=["adjudicate_labels", "view_label"]))
    Assignment.objects.create(query_id=7, annotator=ann)
    Assignment.objects.create(query_id=7, annotator=bob, role="overlap")
    return {"ann": ann, "bob": bob, "judge": judge}


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def state():
    return sorted(Label.objects.values_list("image_id", "value", "decided_by")), LabelEvent.objects.count()


def test_the_queue_shows_each_judgment_and_takes_a_decision(split):
    judge = logged_in(split["judge"])
    page = judge.get("/queries/7/adjudicate").content.decode()
    assert 'data-image-id="1000"' in page and 'data-image-id="1001"' not in page
    assert 'ann</span>: <span class="value relevant">relevant<' in page
    assert 'bob</span>: <span class="value not_relevant">not relevant<' in page  # the words, not the stored value
    assert 'Final now: <strong class="final">undecided<' in page
    response = judge.post("/queries/7/adjudicate", {"image": 1000, "value": "not_relevant"}, follow=True)
    assert "Image 1000: final label not relevant." in response.content.decode()
    assert "No disagreement waits for a decision." in response.content.decode()
    assert Label.objects.get(image_id=1000).decided_by == "adjudicated"


@pytest.mark.parametrize(
    "body, status, reason",
    [
        ({"image": 1001, "value": "relevant"}, 409, "its judgments agree"),
        ({"image": 1000, "value": "maybe"}, 400, "Decide relevant, not relevant or unsure"),
        ({"image": "1000\x00", "value": "relevant"}, 400, "no known image id"),
        ({"image": 424242, "value": "relevant"}, 400, "no known image id"),
    ],
)
def test_a_refused_decision_says_why_at_the_top_and_changes_nothing(split, body, status, reason):
    before = state()
    response = logged_in(split["judge"]).post("/queries/7/adjudicate", body)
    assert response.status_code == status and reason in response.content.decode()
    assert 'id="adjudication-error"' in response.content.decode()
    assert state() == before


def test_without_the_permission_the_queue_is_refused(split):
    before = state()
    for response in (
        logged_in(split["ann"]).get("/queries/7/adjudicate"),
        logged_in(split["ann"]).post("/queries/7/adjudicate", {"image": 1000, "value": "relevant"}),
    ):
        assert response.status_code == 403 and "can adjudicate" in response.content.decode()
    assert state() == before
    assert logged_in(split["judge"]).get("/queries/99/adjudicate").status_code == 404


def test_the_dashboard_shows_the_team(split):
    judge = logged_in(split["judge"])
    listing = judge.get("/dashboard/").content.decode()
    assert "bob (overlap)" in listing and "judged by ann, bob" in listing
    assert '<a href="/queries/7/adjudicate">1</a>' in listing  # one undecided image
    one = judge.get("/dashboard/7/").content.decode()
    assert "Agreement on <strong>2</strong> double-labeled images" in one
    assert "1 disagreement to adjudicate" in one
    figures = judge.get("/dashboard/agreement/").content.decode()
    assert "Overall: <strong>2</strong> items" in figures and "ann · bob" in figures


def test_the_overlap_command(split):
    out = StringIO()
    call_command("overlap", "--query", "7", "--fraction", "0.5", stdout=out)
    assert OverlapImage.objects.filter(query_id=7).count() == 1 and "1 images added" in out.getvalue()
    query = Query.objects.get(pk=7)
    assert (query.overlap_fraction, query.judgments_wanted) == (0.5, 2)
    with pytest.raises(CommandError, match="Say what to sample"):
        call_command("overlap")
    with pytest.raises(CommandError, match="unknown query"):
        call_command("overlap", "--query", "99", "--fraction", "0.1")
    with pytest.raises(CommandError, match="between 0 and 1"):
        call_command("overlap", "--fraction", "2")
    with pytest.raises(CommandError, match="2 or 3"):
        call_command("overlap", "--fraction", "0.1", "--judgments", "5")
