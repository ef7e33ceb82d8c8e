"""Issue 62: a scripted team that does what the API's advice says reaches a certified benchmark claim the way the
simulator's team does (evaluation/benchmark_sim.py): annotators label down the rankings, the adjudicator confirms
the frames' positives whenever the advice says "wait" (before any draw too), staff draw when every query says
"check", each sampled pair gets its one fresh look from someone who had not judged it, and the first draw counts
the confirmed positives instead of sampling the frames whole. Everything goes through the REST API."""

import random
from collections import Counter

import pytest
from django.contrib.auth.models import User
from django.core.management import call_command

from annotator.models import BenchmarkCheck, Query
from search.facade import search
from tests.annotator.claims_api import api_for, label
from tests.factories import make_collection

pytestmark = pytest.mark.django_db
URL = "/api/completeness/benchmark/"
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


def says(world, user, query_id: int, image_id: int) -> str:
    wrong = random.Random(f"{user.pk}:{query_id}:{image_id}").random() < MISTAKES
    return "relevant" if (image_id in world["truth"][query_id]) != wrong else "not_relevant"


def candidates(user, query_id: int, strategy: str) -> list[int]:
    answer = api_for(user).get(f"/api/queries/{query_id}/candidates/", {"strategy": strategy, "k": BATCH})
    assert answer.status_code == 200, answer.content
    return [row["image_id"] for row in answer.json()["results"]]


def judge(world, user, query, image_ids) -> None:
    for value in ("relevant", "not_relevant"):
        label(user, query, [i for i in image_ids if says(world, user, query.pk, i) == value], value)


def test_a_team_that_follows_the_advice_confirms_before_it_draws_and_certifies(world):
    queries, boss = world["queries"], world["boss"]
    spent = Counter()
    first_draw = None
    for _ in range(300):
        advice = {
            query.pk: api_for(boss)
            .get(f"/api/queries/{query.pk}/completeness/", {"claim": "benchmark"})
            .json()["advice"]
            for query in queries
        }
        steps = {said["next"] for said in advice.values()}
        if steps == {"done"}:
            break
        worked = False
        if "wait" in steps:  # the expert works the queue: the frames' single positives, the checks' positive looks
            for query in queries:
                queue = api_for(boss).get(f"/api/queries/{query.pk}/disagreements/", {"pending": 1}).json()
                for row in queue["results"]:
                    value = "relevant" if row["image"] in world["truth"][query.pk] else "not_relevant"
                    decided = api_for(boss).post(
                        f"/api/queries/{query.pk}/adjudicate/", {"image": row["image"], "value": value}, format="json"
                    )
                    assert decided.status_code == 200, decided.content
                    spent["adjudications"] += 1
                    worked = True
        for query in queries:  # a query that says "label" is labeled, whatever the others say
            if advice[query.pk]["next"] != "label":
                continue
            for user in world["team"]:  # an open check's pairs: a fresh look each, from someone who had not judged it
                looks = candidates(user, query.pk, "check")
                if looks:
                    judge(world, user, query, looks)
                    spent["looks"] += len(looks)
                    worked = True
                    break
            else:
                batch = candidates(world["ann"], query.pk, "text")
                judge(world, world["ann"], query, batch)
                spent["review"] += len(batch)
                worked = worked or bool(batch)
        if worked or "wait" in steps:
            continue
        # Every query says "check" (or has nothing left to label): staff draw, and the draw is not refused.
        drawn = api_for(boss).post(URL, {"target_recall": 0.9, "confidence": 0.95}, format="json")
        assert drawn.status_code in (200, 201), drawn.content
        first_draw = first_draw or drawn.json()
    check = BenchmarkCheck.objects.order_by("-ordinal").first()
    assert check is not None and check.status == "certified", (spent, check, advice)
    # The first draw came after the confirmations: it counted the positives found, and sampled the rest.
    first = BenchmarkCheck.objects.get(ordinal=1)
    assert first_draw["found"] == first.found_at_draw > 0
    assert first.sampled_from == sum(row["sampled_from"] for row in first_draw["queries"])
    assert first.looks == 1 and spent["adjudications"] >= first.found_at_draw  # each confirmed by the adjudicator
