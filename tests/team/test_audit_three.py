"""The third audit's small holes (issue 37, LOW): each test fails on the code before its mend."""

import json

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import Permission, User
from django.db import OperationalError
from django.test import Client

from annotator.labels import LabelChange, set_labels, visibility
from annotator.models import Judgment, LabelEvent, Query
from annotator.team import agreement
from annotator.team.panel import team_figures as _team
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db

R, N, U = "relevant", "not_relevant", "unsure"


@pytest.fixture
def voted(write_json):
    """Query 5: ann and bob judge 12 images, disagreeing on a few; an import labels some as well; image 1012
    has relevant against unsure (final relevant, yet a disagreement)."""
    import_inat(write_json(inat_document(images=16)))
    Query.objects.create(id=5, text="a heron with a fish")
    ann, bob = User.objects.create_user("ann", password="pw"), User.objects.create_user("bob", password="pw")
    ann_votes = [R, R, N, N, R, N, R, R, N, N, R, N]
    bob_votes = [R, N, N, N, R, R, R, R, N, R, R, N]
    set_labels(
        query_id=5, changes=[LabelChange(1000 + i, v) for i, v in enumerate(ann_votes)], user=ann, source="click"
    )
    set_labels(
        query_id=5, changes=[LabelChange(1000 + i, v) for i, v in enumerate(bob_votes)], user=bob, source="click"
    )
    set_labels(query_id=5, changes=[LabelChange(1000 + i, R) for i in range(4)], user=None, source="import")
    set_labels(query_id=5, changes=[LabelChange(1012, R)], user=ann, source="click")
    set_labels(query_id=5, changes=[LabelChange(1012, U)], user=bob, source="click")
    boss = User.objects.create_superuser("boss", "boss@example.org", "pw")
    return {"ann": ann, "bob": bob, "boss": boss, "ann_votes": ann_votes, "bob_votes": bob_votes}


def logged_in(user) -> Client:
    client = Client()
    client.force_login(user)
    return client


def test_an_import_is_not_a_voter_and_agreement_json_keeps_full_precision(voted):
    """An import's labels made kappa null (a third voter "(import)"); agreement.json rounded to 4 decimals."""
    client = logged_in(voted["boss"])
    waiting = client.get("/exports/agreement.json")  # issue 65: computed in the background, never in the request
    assert waiting.status_code == 202 and waiting["Retry-After"] == "3" and b'id="computing"' in waiting.content
    agreement.refresh_report(None, agreement.RESAMPLES)  # what annotator.agreement_report runs
    figures = json.loads(client.get("/exports/agreement.json").content)
    row = figures["queries"]["5"]
    codes = {R: 1, N: 0}
    data = np.array([[codes[v] for v in voted["ann_votes"]], [codes[v] for v in voted["bob_votes"]]], dtype=float)
    assert row["items"] == 12
    assert row["cohen_kappa"] is not None
    assert row["krippendorff_alpha"] == krippendorff.alpha(reliability_data=data, level_of_measurement="nominal")
    assert "(import)" not in figures["annotators"]


def test_one_seed_gives_one_interval_everywhere(voted):
    """The query's page, its row of `agreement` and the overall line over the same items gave three intervals."""
    by_query = agreement.report([5])
    page = _team(Query.objects.get(pk=5))["figures"]
    assert by_query["queries"]["5"]["krippendorff_alpha_interval"] == page.krippendorff_alpha_interval
    assert by_query["overall"]["krippendorff_alpha_interval"] == page.krippendorff_alpha_interval
    assert page.krippendorff_alpha_interval is not None


def test_the_agreement_page_uses_table_styles_and_the_admin_links_every_export(voted):
    client = logged_in(voted["boss"])
    assert 'id="agreement-computing"' in client.get("/dashboard/agreement/").content.decode()
    agreement.refresh_report(None, 0)  # the page's figures (no intervals), as the background computes them
    agreement.refresh_report(None, agreement.RESAMPLES)  # agreement.json's
    page = client.get("/dashboard/agreement/").content.decode()
    assert 'class="grid"' not in page and 'id="agreement-queries"' in page
    index = client.get("/admin/").content.decode()
    for name in ("inquire_queries.csv", "inquire_annotations.csv", "inquire_labels.csv", "inquire_judgments.csv",
                 "agreement.json"):  # fmt: skip
        assert f"/exports/{name}" in index
        assert client.get(f"/exports/{name}").status_code == 200, name


def test_the_queue_and_the_dashboard_count_the_same_undecided(voted):
    """The dashboard said 4 undecided where the queue said 5: the queue also holds relevant against unsure."""
    client = logged_in(voted["boss"])
    dashboard = client.get("/dashboard/").content.decode()
    undecided = Query.objects.filter(pk=5).values_list("tally__undecided", flat=True).get()
    assert f'<td class="num undecided"><a href="/queries/5/adjudicate">{undecided}</a>' in dashboard
    queue = client.get("/queries/5/adjudicate").content.decode()
    assert f'<span id="undecided">{undecided}</span> undecided' in queue
    pending = int(queue.split('id="pending">')[1].split(" ")[0])
    assert f"{pending - undecided} with a final label from the rule" in queue  # 1012 among them
    assert pending > undecided


def test_a_save_whose_answer_fails_is_not_saved(voted, monkeypatch):
    """The counts read after the write failed: 503 "nothing was saved", yet the write had committed."""
    calls = []

    def lost(self, query):
        calls.append(query.pk)
        raise OperationalError("server closed the connection unexpectedly")

    monkeypatch.setattr(visibility.Sight, "counts", lost)
    before = (Judgment.objects.count(), LabelEvent.objects.count())
    body = {"image": 1014, "value": "relevant", "source": "click"}
    answer = logged_in(voted["ann"]).post("/queries/5/labels", body, content_type="application/json")
    assert answer.status_code == 503 and "nothing was saved" in answer.json()["error"]
    assert calls  # the write ran, and went back with its answer
    assert (Judgment.objects.count(), LabelEvent.objects.count()) == before


def test_submit_refuses_a_batch_past_its_cap_and_stores_nothing(voted):
    before = LabelEvent.objects.count()
    answer = logged_in(voted["ann"]).post(
        "/queries/5/submit", {"images": list(range(1000, 1000 + 2001))}, content_type="application/json"
    )
    assert answer.status_code == 400 and "at most 2000 images per Submit" in answer.json()["error"]
    assert LabelEvent.objects.count() == before


def test_the_schema_says_what_the_label_endpoints_answer(voted):
    client = logged_in(voted["boss"])
    schema = client.get("/api/schema/?format=json").json()
    components = schema["components"]["schemas"]
    label = components["Label"]["properties"]

    def enum(field: dict) -> list:
        ref = field.get("$ref") or field["allOf"][0]["$ref"]
        return components[ref.rsplit("/", 1)[1]]["enum"]

    assert "undecided" in enum(label["value"]) and "sealed" in enum(label["decided_by"])
    assert label["annotator"].get("nullable") is True and label["id"].get("nullable") is True
    paths = schema["paths"]
    assert {"403", "404"} <= set(paths["/api/queries/{id}/disagreements/"]["get"]["responses"])
    assert {"400", "403", "404", "409"} <= set(paths["/api/queries/{id}/adjudicate/"]["post"]["responses"])
    assert {"400", "403"} <= set(paths["/api/labels/"]["post"]["responses"])
    assert {"403", "404"} <= set(paths["/api/labels/{id}/"]["delete"]["responses"])


def test_disagreements_need_the_adjudicate_permission(voted):
    """Any signed-in user read every annotator's votes by name."""
    assert logged_in(voted["bob"]).get("/api/queries/5/disagreements/").status_code == 403
    judge = User.objects.create_user("judge", password="pw")
    judge.user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    listed = logged_in(judge).get("/api/queries/5/disagreements/").json()["results"]
    assert {item["image"] for item in listed} >= {1001, 1005, 1009, 1012}


def test_a_plain_annotator_is_told_why_the_dashboard_is_closed(voted):
    answer = logged_in(voted["ann"]).get("/dashboard/")
    assert answer.status_code == 403
    assert 'id="refusal"' in answer.content.decode() and "permission" in answer.content.decode()


def test_made_up_tokens_are_counted_and_basic_is_told_what_to_send(voted, monkeypatch):
    from django.core.cache import cache
    from rest_framework.test import APIClient
    from rest_framework.throttling import AnonRateThrottle

    cache.clear()
    monkeypatch.setattr(AnonRateThrottle, "rate", "3/minute", raising=False)
    client = APIClient()
    basic = client.get("/api/queries/", HTTP_AUTHORIZATION="Basic YW5uOnB3")
    assert basic.status_code == 401 and "Authorization: Token" in basic.json()["detail"]
    assert basic["WWW-Authenticate"] == "Token"
    guesses = [client.get("/api/queries/", HTTP_AUTHORIZATION=f"Token made-up-{n}").status_code for n in range(4)]
    assert guesses == [401, 401, 429, 429]  # the Basic try and two guesses spent the rate of 3
