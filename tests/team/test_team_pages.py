"""The adjudication queue, the agreement page, the dashboard's team panel and `manage.py overlap`."""

import re
from io import StringIO

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import CommandError, call_command
from django.test import Client

from annotator.labels import LabelChange, set_labels
from annotator.models import Assignment, Label, LabelEvent, OverlapImage, Query
from annotator.team import agreement, panel
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


def test_every_link_in_an_adjudicators_breadcrumbs_opens_for_them(split):
    """An adjudicator who may not read the dashboards (only adjudicate_labels) is led back to the queries and the
    labeling page, not to dashboards that answer 403."""
    expert = User.objects.create_user("expert", password="pw")
    expert.user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    for user in (expert, User.objects.create_superuser("boss", "b@example.org", "pw")):
        client = logged_in(user)
        page = client.get("/queries/7/adjudicate").content.decode()
        crumbs = page.split('<p class="crumbs">')[1].split("</p>")[0]
        links = re.findall(r'href="([^"]+)"', crumbs)
        assert len(links) == 2 and all(client.get(link).status_code == 200 for link in links), (user, links)


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
    assert "Agreement: computing…" in judge.get("/dashboard/7/").content.decode()  # the background's work
    panel.refresh(7)  # what annotator.refresh_agreement runs
    one = judge.get("/dashboard/7/").content.decode()
    assert "Agreement (blind votes) on <strong>2</strong> double-labeled images" in one
    assert "1 disagreement to adjudicate" in one
    agreement.refresh_report(None, 0)  # what annotator.agreement_report runs for the page
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


def test_the_team_figures_are_never_computed_in_a_request(split, monkeypatch, django_capture_on_commit_callbacks):
    """Issue 38: the query page bootstrapped its agreement intervals (1,000 resamplings) inside the request.
    Now a cold cache asks the background once, the panel polls, and a new judgment computes them again there."""
    from django.core.cache import cache

    computed = []
    original = agreement.reliability
    monkeypatch.setattr(
        agreement, "reliability", lambda votes, **kw: computed.append(len(votes)) or original(votes, **kw)
    )
    cache.clear()
    judge = logged_in(split["judge"])
    with django_capture_on_commit_callbacks() as sent:
        page = judge.get("/dashboard/7/").content.decode()
    assert computed == [] and sent  # nothing bootstrapped here; the background was asked (and for the run)
    assert "Agreement: computing…" in page and 'hx-select="#team-agreement"' in page

    panel.refresh(7)  # what annotator.refresh_agreement runs
    assert computed == [2]
    page = judge.get("/dashboard/7/").content.decode()
    assert (
        "Agreement (blind votes) on <strong>2</strong> double-labeled images" in page
        and "computing" not in page.split('id="team"')[1]
    )
    assert computed == [2]  # read from the cache

    carl = User.objects.create_user("carl", password="pw")
    set_labels(query_id=7, changes=[LabelChange(1001, "relevant")], user=carl, source="click")
    assert "Agreement: computing…" in judge.get("/dashboard/7/").content.decode()  # a new judgment: a new key
    assert computed == [2]


def test_an_adjudicator_finds_the_queue_from_the_query_list(split):
    """Issue 64: the demo's adjudicator had no way to their queue (the dashboard is staff's; nothing linked it)."""
    judge = User.objects.create_user("adjudicator", password="pw")  # the demo's: adjudication alone, not staff
    judge.user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    listed = logged_in(judge).get("/").content.decode()
    assert 'class="adjudicate-link" href="/queries/7/adjudicate"' in listed and "(1 undecided)" in listed
    assert "adjudicate-link" not in logged_in(split["ann"]).get("/").content.decode()
    assert logged_in(judge).get("/queries/7/adjudicate").status_code == 200


def test_a_decision_sent_after_the_session_ended_is_said_unsaved_after_logging_in(split):
    """Issue 64: on the adjudication page an ended session dropped the decision in silence (a bare login form, then
    the image still undecided and nothing said)."""
    before = state()
    ended = Client()  # nobody signed in: the session ended
    answer = ended.post("/queries/7/adjudicate", {"image": 1000, "value": "relevant"})
    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=/queries/7/adjudicate%3Funsaved%3D1000%253Arelevant"
    assert state() == before  # nothing decided
    login = Client().get(answer["Location"]).content.decode()
    assert "Your session ended: your decision waits and is saved after you log in." in login
    back = logged_in(split["judge"]).get("/queries/7/adjudicate?unsaved=1000:relevant").content.decode()
    assert "Your session had ended, so your decision on image 1000 (relevant) waited" in back
    assert '<form method="post" action="/queries/7/adjudicate" class="notice" id="kept-decision"' in back
    assert state() == before  # the GET sends nothing: the page's script posts it (tests/browser/test_team.py)
    assert "kept-decision" not in logged_in(split["judge"]).get("/queries/7/adjudicate?unsaved=x:y").content.decode()
