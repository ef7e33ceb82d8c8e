"""Issue 62: a scripted team that does what the API's advice says reaches a certified benchmark claim the way the
simulator's team does (evaluation/benchmark_sim.py): annotators label down the rankings, the adjudicator confirms
the frames' positives whenever the advice says "wait" (before any draw too), staff draw when every query says
"check", each sampled pair gets its one fresh look from someone who had not judged it, and the first draw counts
the confirmed positives instead of sampling the frames whole. Everything goes through the REST API."""

import random

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotator import facade
from annotator.models import CompletenessCheck, Judgment, Query
from evaluation.api_team import Member, Refused, follow_the_advice
from search.facade import search
from tests.annotator.claims_api import api_for
from tests.factories import make_collection

pytestmark = pytest.mark.django_db
IMAGES, POSITIVES, MISTAKES, BATCH = 400, 15, 0.05, 50


@pytest.fixture
def world(tiny_settings, tmp_path):
    """400 embedded images, two queries with 15 true positives each (14 in the top 40 of the query's ranking,
    one deeper), five annotators each wrong on their own 5% of the images (Ann reviews; a re-check's pairs that some
    have judged want another for their fresh look), and an expert adjudicator (staff)."""
    make_collection(tmp_path / "images", IMAGES)
    call_command("embed")
    queries = [Query.objects.create(text=text) for text in ("Black Skimmer skimming", "Flamingo feeding")]
    rng = random.Random(62)
    truth = {}
    for query in queries:  # most positives near the top of the query's ranking, one deep in it
        ranked = [hit.image_id for hit in search(text=query.text, k=IMAGES)]
        truth[query.pk] = set(rng.sample(ranked[:40], POSITIVES - 1)) | set(rng.sample(ranked[200:], 1))
    team = [User.objects.create_user(name, password=f"pw-{name}-1") for name in ("ann", "bob", "cy", "di", "ed")]
    boss = User.objects.create_superuser("boss", "boss@example.org", "pw-boss-1")
    return {"queries": queries, "truth": truth, "ann": team[0], "team": team, "boss": boss}


class ClientApi:
    """evaluation.api_team's Api over Django's test client: every request through the REST API's whole stack."""

    def __init__(self, users):
        self.users = {user.username: user for user in users}

    def get(self, member, path, params):
        return self._json(api_for(self.users[member]).get(path, params))

    def post(self, member, path, body):
        return self._json(api_for(self.users[member]).post(path, body, format="json"))

    @staticmethod
    def _json(answer):
        if answer.status_code == 409:
            raise Refused(answer.content)
        assert answer.status_code in (200, 201), answer.content
        return answer.json()


def member(world, user) -> Member:
    """`user`'s votes: the truth, but wrong on their own 5% of the images. Which images is keyed by names, not by
    database ids (PostgreSQL's sequences run on from the tests before), so every run meets the same mistakes."""
    texts = {query.pk: query.text for query in world["queries"]}

    def says(query_id: int, image_id: int) -> bool:
        mistake = random.Random(f"{user.username}:{texts[query_id]}:{image_id}").random() < MISTAKES
        wrong = not user.is_staff and mistake
        return (image_id in world["truth"][query_id]) != wrong

    return Member(user.username, says)


def test_a_team_that_follows_the_advice_confirms_before_it_draws_and_certifies(world):
    queries, boss, team = world["queries"], world["boss"], world["team"]
    api = ClientApi([*team, boss])
    people = [member(world, user) for user in team]
    ids, expert = [q.pk for q in queries], member(world, boss)
    spent = follow_the_advice(api, ids, people[0], people[1:], expert, "boss", strategy="text", max_rounds=300)
    assert set(spent.steps.values()) == {"done"}, spent
    check = CompletenessCheck.objects.filter(claim="benchmark").order_by("-ordinal").first()
    assert check is not None and check.status == "certified", (spent, check)
    # The first draw came after the confirmations: it counted the positives found, and sampled the rest.
    first = CompletenessCheck.objects.filter(claim="benchmark").get(ordinal=1)
    assert spent.first_draw["found"] == first.found_at_draw > 0
    assert first.sampled_from == sum(row["sampled_from"] for row in spent.first_draw["queries"])
    assert first.looks == 1 and spent.adjudications >= first.found_at_draw  # each confirmed by the adjudicator
    assert spent.looks > 0 and spent.review > 0


def test_a_reviewer_who_reads_the_advice_every_few_labels_leaves_a_batch_once_it_reads_dry(world):
    """`step`: the reviewer saves a batch 10 labels at a time and reads the advice after each, as the labeling page's
    side pane shows it whenever saving pauses. With batches of 40 the reviewer leaves a batch at the step where the
    advice stops asking for review (from 175 judgments on: the first step there, 180, lies inside a batch of 40),
    where one who reads it only after whole batches would label on to the batch's end (a multiple of 40)."""
    queries, boss, team = world["queries"], world["boss"], world["team"]
    api = ClientApi([*team, boss])
    people = [member(world, user) for user in team]
    ids, expert = [q.pk for q in queries], member(world, boss)
    spent = follow_the_advice(
        api, ids, people[0], people[1:], expert, "boss", strategy="text", batch=40, step=10, max_rounds=300
    )
    assert set(spent.steps.values()) == {"done"}, spent
    first = CompletenessCheck.objects.filter(claim="benchmark").get(ordinal=1)
    reviewed = [
        Judgment.objects.filter(query=query, annotator=world["ann"], created_at__lt=first.created_at).count()
        for query in queries
    ]
    assert all(count >= facade.ADVICE_LEAST["benchmark"] and count % 10 == 0 for count in reviewed), reviewed
    assert any(count % 40 for count in reviewed), reviewed  # left inside a batch


def test_a_team_that_follows_each_querys_own_advice_draws_each_querys_check_and_certifies_it(world):
    """claim="query": the advice read is each query's own (?claim=query), staff draw a query's check in the round
    its advice says so, and what the team spends is counted per query, as the simulator's per_query_claims counts
    it (bench/completeness_bench.py --through-api --claim query)."""
    queries, boss, team = world["queries"], world["boss"], world["team"]
    api = ClientApi([*team, boss])
    people = [member(world, user) for user in team]
    ids, expert = [q.pk for q in queries], member(world, boss)
    spent = follow_the_advice(
        api, ids, people[0], people[1:], expert, "boss", strategy="text", max_rounds=300, claim="query"
    )
    assert set(spent.steps.values()) == {"done"}, spent
    for query in queries:
        checks = CompletenessCheck.objects.filter(claim="query", query=query).order_by("ordinal")
        assert checks.count() == spent.draws_by_query[query.pk] >= 1
        assert checks.last().status == "certified", (spent, list(checks.values("ordinal", "status")))
        assert checks.first().found_at_draw > 0  # confirmed before the first draw, not a frame sampled whole
    assert not CompletenessCheck.objects.filter(claim="benchmark").exists()
    assert sum(spent.by_query.values()) == spent.labels == spent.review + spent.looks + spent.adjudications
    judged = {q.pk: Judgment.objects.filter(query=q).count() for q in queries}
    assert all(spent.by_query[q] >= judged[q] > 0 for q in judged), (spent.by_query, judged)
