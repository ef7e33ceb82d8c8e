"""The benchmark claim end to end through the API (annotator.completeness.benchmark): one pooled random check over two
queries' frames, its pairs labeled through each query's check ranking with one fresh blind look and an adjudicator, the
claim decided by the write that settles its last pair, per-query intervals, advice, and every refusal leaving
the data as it was."""

import pytest
from django.contrib.auth.models import User

from annotator.completeness import certify, checks, sample_progress
from annotator.labels import LabelChange, sealed, set_labels
from annotator.models import CheckImage, CompletenessCheck, Judgment, Label, OverlapImage, Query, QueryFrame
from search.facade import search
from tests.annotator.claims_api import ONE_LOOK, api_for, check_candidates, label, seeded_order
from tests.factories import database_snapshot

pytestmark = pytest.mark.django_db
URL = "/api/completeness/benchmark/"


@pytest.fixture
def bench(labeling):
    """Two queries labeled down their text rankings by Ann (top 20, every third relevant), Bob agreeing on her
    positives (so they are confirmed), each with a frozen 40-deep frame."""
    ann, admin = labeling["annotator"], labeling["admin"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    second = Query.objects.create(text="Flamingo feeding with its head upside down", split="val")
    Query.objects.filter(pk=labeling["query"].pk).update(split="val")
    queries = [Query.objects.get(pk=labeling["query"].pk), second]
    for query in queries:
        top = [hit.image_id for hit in search(text=query.text, k=20)]
        changes = [LabelChange(i, "relevant" if n % 3 == 0 else "not_relevant") for n, i in enumerate(top)]
        set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
        relevant = list(Label.objects.filter(query=query, value="relevant").values_list("image_id", flat=True))
        label(bob, query, relevant, "relevant")
        frame = {"target_recall": 0.5, "frame": {"kind": "top", "depth": 40}, "dry_run": True}
        assert api_for(admin).post(f"/api/queries/{query.pk}/completeness/", frame, format="json").status_code == 200
    return {**labeling, "bob": bob, "queries": queries}


def draw(bench, **body):
    return api_for(bench["admin"]).post(URL, {"target_recall": 0.5, "confidence": 0.9, **body}, format="json")


def test_a_dry_run_costs_the_pooled_check_and_draws_nothing(bench):
    before = database_snapshot()
    cost = draw(bench, dry_run=True).json()
    assert cost["queries"] == 2 and cost["found"] == 14  # 7 confirmed positives a query
    frames = sum(len(q.frame.ids) if hasattr(q, "frame") else 0 for q in bench["queries"])
    assert frames == 0  # nothing frozen by a dry run: the defaults are computed, not kept
    want = certify.check_size(14, cost["sampled_from"], 0.5, certify.tested_at(0.9, 1), ONE_LOOK, cost["tolerates"])
    assert cost["sample"] == want and cost["looks"] == want and cost["looks_per_pair"] == 1
    assert cost["miss_rate"] == 0.05 and cost["tested_miss_rate"] == pytest.approx(ONE_LOOK)
    assert cost["unconfirmed"] == 0 and cost["sample_after_confirmation"] == want
    assert database_snapshot() == before


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"target_recall": 1e-300}, "target_recall"),
        ({"target_recall": "0.9"}, "target_recall"),
        ({"confidence": 1}, "confidence"),
        ({"queries": []}, "queries"),
        ({"queries": [1, "two"]}, "query id"),
        ({"queries": [99999]}, "99999"),
        ({"queries": [True]}, "query id"),
        ({"queries": [2**70]}, "query id"),
        ({"split": "train"}, "split"),
        ({"split": "val", "queries": [1]}, "not both"),
        ({"dry_run": "true"}, "dry_run"),
        ({"split": "test"}, "No query is in the test split"),
    ],
)
def test_bad_input_is_refused_with_a_sentence_and_nothing_drawn(bench, body, words):
    before = database_snapshot()
    answer = draw(bench, **body)
    # A malformed body is a 400; a well-formed one naming queries the project does not hold, a 409 (issue 63).
    assert answer.status_code == (409 if words in ("99999", "No query is in the test split") else 400), answer.content
    assert words in answer.json()["detail"]
    assert database_snapshot() == before


def test_only_staff_draw_and_before_any_check_the_claim_is_404_with_a_sentence(bench):
    answer = api_for(bench["annotator"]).post(URL, {"target_recall": 0.5}, format="json")
    assert answer.status_code == 403 and "permission" in answer.json()["detail"]
    missing = api_for(bench["annotator"]).get(URL)
    assert missing.status_code == 404 and "No benchmark check yet" in missing.json()["detail"]
    assert api_for(bench["annotator"]).get(URL + "frame/", {"query": "x"}).status_code == 400


def test_the_pooled_check_is_labeled_through_each_querys_check_ranking_and_decided_by_the_last_write(bench):
    ann, bob = bench["annotator"], bench["bob"]
    first, second = bench["queries"]
    drawn = draw(bench, split="val")
    assert drawn.status_code == 201, drawn.content
    shown = drawn.json()
    assert shown["status"] == "checking" and {row["query"] for row in shown["queries"]} == {first.pk, second.pk}
    assert (
        "Checking whether micro-recall is at least 50% with 90% confidence over the frames of 2 queries"
        in (shown["claim"])
    )
    check = CompletenessCheck.objects.filter(claim="benchmark").get()
    pairs = list(check.images.order_by("position").values_list("query_id", "image_id"))
    assert len(pairs) == shown["sample"]["size"] > 0
    judged = {(q, i) for q, i in pairs if Judgment.objects.filter(query_id=q, image_id=i).exists()}
    under_seal = {(q, i) for q, i in pairs if OverlapImage.objects.filter(query_id=q, image_id=i).exists()}
    assert under_seal == judged  # a fresh look at a pair someone judged is blind to the old vote
    for query in (first, second):
        frozen = QueryFrame.objects.get(query=query)
        frame = api_for(bench["admin"]).get(URL + "frame/", {"query": query.pk}).json()["image_ids"]
        assert frozen.size == len(frame) and frozen.chosen  # each query's default frame, frozen by the draw
        refused = api_for(ann).get(URL + "frame/", {"query": query.pk})  # frames are staff's (issue 63)
        assert refused.status_code == 403 and "for staff" in refused.json()["detail"]
        mine = [i for q, i in pairs if q == query.pk]
        assert set(check_candidates(bob, query)) == set(mine)  # reached through the query's own check ranking
    assert draw(bench).status_code == 200  # drawing again answers the open one
    for user in (ann, bob):
        for query in (first, second):
            label(user, query, check_candidates(user, query), "not_relevant")
    check.refresh_from_db()
    assert check.status == "certified" and check.decided_at is not None  # decided by the last write
    shown = api_for(ann).get(URL).json()
    claim = certify.claim(14, check.sampled_from, len(pairs), 0, 0.5, check.tested_at, ONE_LOOK)
    assert shown["recall_lower_bound"] == pytest.approx(claim.recall_lower_bound)
    assert shown["claim"].startswith("Micro-recall is at least 50% with 90% confidence over the frames of 2 queries")
    assert "positives outside the frames: not bounded" in shown["claim"]
    for row in shown["queries"]:
        assert row["found"] == 7 and row["positives_in_sample"] == 0
        assert 0 < row["recall"]["low_corrected"] <= row["recall"]["low"] <= 1 == row["recall"]["high"]
    # Bonferroni over the 2 queries: each lower bound at 5% one-sided is the 90% interval's low end.
    row = shown["queries"][0]
    corrected, _ = certify.recall_interval(7, row["sampled_from"], row["sample_size"], 0, 0.9, ONE_LOOK)
    assert row["recall"]["low_corrected"] == pytest.approx(corrected, abs=1e-4)
    above = sum(row["recall"]["low_corrected"] >= 0.5 for row in shown["queries"])
    assert shown["queries_above_target_corrected"] == above <= shown["queries_above_target"]
    assert shown["smallest_query"]["found"] == 7 and shown["smallest_query"]["query"] == first.pk
    assert shown["advice"]["label_more"] == []


def test_a_positive_met_in_the_pooled_sample_is_adjudicated_and_names_its_query_to_label_more(bench):
    ann, bob, admin = bench["annotator"], bench["bob"], bench["admin"]
    first, second = bench["queries"]
    draw(bench, split="val", target_recall=0.95)
    check = CompletenessCheck.objects.filter(claim="benchmark").get()
    # A pair nobody judged before the draw: one Ann had called not relevant would come back "revised", not
    # "confirm" (the draw is random, so which kind comes first differs from run to run).
    met = (
        CheckImage.objects.filter(completeness_check=check, query=second)
        .exclude(image_id__in=Judgment.objects.filter(query=second).values("image_id"))
        .order_by("position")
        .first()
    )
    label(ann, second, [met.image_id], "relevant")
    label(bob, second, [met.image_id], "relevant")
    for user in (ann, bob):
        for query in (first, second):
            label(user, query, check_candidates(user, query), "not_relevant")
    waiting = api_for(admin).get(f"/api/queries/{second.pk}/disagreements/", {"pending": 1}).json()
    rows = waiting.get("results", waiting)
    assert [(row["image"], row["reason"]) for row in rows] == [(met.image_id, "confirm")]
    assert (
        CompletenessCheck.objects.filter(claim="benchmark").get().status == "checking"
    )  # an agreed positive waits for its adjudicator
    decided = api_for(admin).post(
        f"/api/queries/{second.pk}/adjudicate/", {"image": met.image_id, "value": "relevant"}, format="json"
    )
    assert decided.status_code == 200, decided.content
    shown = api_for(admin).get(URL).json()
    assert shown["sample"]["positives"] == 1
    row = next(row for row in shown["queries"] if row["query"] == second.pk)
    assert row["positives_in_sample"] == 1 and row["recall"]["low"] < 1
    if shown["status"] == "not_certified":
        assert shown["advice"]["label_more"][0] == second.pk and str(second.pk) in shown["advice"]["reason"]


def test_a_pooled_check_that_met_more_positives_than_it_may_is_decided_at_once_and_its_rows_say_so(bench, client):
    """Curtailed sampling over the pooled sample: the adjudication that makes the positives met more than any
    certificate of its size allows decides the benchmark check; each query's row reads only its pairs decided."""
    ann, admin = bench["annotator"], bench["admin"]
    queries = {query.pk: query for query in bench["queries"]}
    draw(bench, split="val")
    check = CompletenessCheck.objects.filter(claim="benchmark").get()
    size = check.images.count()
    most = certify.most_positives(14, check.sampled_from, size, 0.5, check.tested_at, ONE_LOOK)
    fresh = [(q, i) for q, query in queries.items() for i in check_candidates(ann, query)][: most + 1]
    assert most >= 0 and len(fresh) == most + 1 < size - 1, (most, size)
    for query_id, image_id in fresh:
        label(ann, queries[query_id], [image_id], "relevant")
    for n, (query_id, image_id) in enumerate(fresh):
        assert CompletenessCheck.objects.get(pk=check.pk).status == "checking", n  # it may still certify
        adjudicated = api_for(admin).post(
            f"/api/queries/{query_id}/adjudicate/", {"image": image_id, "value": "relevant"}, format="json"
        )
        assert adjudicated.status_code == 200, adjudicated.content
    check.refresh_from_db()
    assert check.status == "not_certified" and check.looked_at == check.positives == most + 1
    shown = api_for(admin).get(URL).json()
    assert f"decided after {most + 1} of its {size} sampled pairs" in shown["decided_early"]
    assert shown["sample"]["labeled"] == most + 1 and shown["sample"]["left"] == size - most - 1
    for row in shown["queries"]:
        met = sum(1 for q, _ in fresh if q == row["query"])
        assert row["sample_size"] == row["positives_in_sample"] == met  # the pairs decided, not the share drawn
        assert row["recall"] is None  # a sample that stopped at a positive gives no interval
    assert shown["smallest_query"] is None and shown["queries_above_target_corrected"] is None
    assert shown["advice"]["label_more"]
    for query in queries.values():
        assert check_candidates(ann, query) == [] and check_candidates(bench["bob"], query) == []
    client.force_login(admin)  # the dashboard's benchmark panel says it where the claim stands
    assert shown["decided_early"] in client.get("/dashboard/").content.decode()
    # Decided, its pairs are open (sealed.open_images): an annotator reads the same sentence as staff.
    assert api_for(bench["bob"]).get(URL).json()["decided_early"] == shown["decided_early"]


def test_a_blind_judge_reads_no_sampled_positive_and_the_same_order(bench, monkeypatch):
    ann, bob = bench["annotator"], bench["bob"]
    first, _ = bench["queries"]
    # A seeded draw: with fresh entropy the sample (51 of 226 pairs) met none of the pairs Ann judged before it about
    # one run in 300, and then nothing is sealed to Bob, so nothing is withheld (rightly: nothing is blind).
    monkeypatch.setattr(checks, "sample_order", seeded_order)
    draw(bench, split="val")
    assert sealed.sealed_to(bob)  # pairs judged before the draw, sampled: Bob judges them blind
    looked = check_candidates(ann, first)[:3]
    label(ann, first, looked, "relevant")
    relevant_first = check_candidates(bob, first)
    label(ann, first, looked, "not_relevant")
    assert check_candidates(bob, first) == relevant_first  # whether a pair wants a look, never what it was called
    shown = api_for(bob).get(URL).json()
    assert shown["withheld"] and shown["sample"]["positives"] is None and shown["queries"][0]["recall"] is None


def test_a_release_carries_the_benchmark_claim_in_its_card_croissant_and_completeness_json(bench, settings, tmp_path):
    import json

    from annotator.releases import publish as releases

    settings.QUIRE_DATA_DIR = tmp_path / "data"
    ann, bob = bench["annotator"], bench["bob"]
    draw(bench, split="val")
    for user in (ann, bob):
        for query in bench["queries"]:
            label(user, query, check_candidates(user, query), "not_relevant")
    answer = api_for(ann).get(URL)
    assert answer.status_code == 200, answer.content
    claim = answer.json()["claim"]
    assert claim.startswith("Micro-recall is at least 50%")
    release = releases.create("v1")
    folder = tmp_path / "data" / "releases" / "v1"
    assert folder == type(folder)(release.folder)
    card = (folder / "README.md").read_text(encoding="utf-8")
    assert f"Benchmark completeness: {claim}" in card
    croissant = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    assert any(claim in line for line in croissant["rai:dataAnnotationAnalysis"])
    both = json.loads((folder / "completeness.json").read_text(encoding="utf-8"))
    assert both["benchmark"]["claim"] == claim and len(both["queries"]) == 2
    assert all(row["claim"] is None and "not bounded" in row["outside_frame"] for row in both["queries"])


def test_no_get_writes_a_table_while_the_benchmark_check_is_open(bench, client):
    """Reads are reads: the benchmark's routes, the dashboard and the queries' pages answer an open benchmark check
    without writing (the next write that settles a pair decides it)."""
    from django.db import connection

    from tests.annotator.test_completeness import Writes

    bob = bench["bob"]
    first, second = bench["queries"]
    draw(bench, split="val")
    # Bob judged none of the sampled pairs (only the confirmed positives, which are not sampled): he can give every
    # fresh look. All but the last, now.
    *rest, last = [(query, image) for query in (first, second) for image in check_candidates(bob, query)]
    for query in (first, second):
        label(bob, query, [image for q, image in rest if q == query], "not_relevant")
    client.force_login(bench["admin"])
    routes = [
        URL, URL + f"frame/?query={first.pk}", "/dashboard/", f"/dashboard/{second.pk}/", "/",
        f"/api/queries/{second.pk}/completeness/?claim=benchmark",
        f"/api/queries/{first.pk}/candidates/?strategy=check", f"/queries/{first.pk}/?ranking=check",
        "/exports/completeness.json",
    ]  # fmt: skip
    writes = Writes()
    with connection.execute_wrapper(writes):
        for route in routes:
            answer = client.get(route)
            assert answer.status_code == 200, (route, answer.status_code)
            if hasattr(answer, "streaming_content"):
                b"".join(answer.streaming_content)
    assert writes.seen == [], writes.seen
    assert CompletenessCheck.objects.filter(claim="benchmark").get().status == "checking"
    label(bob, last[0], [last[1]], "not_relevant")
    assert CompletenessCheck.objects.filter(claim="benchmark").get().status == "certified"


def test_a_benchmark_draw_over_unconfirmed_positives_states_both_costs_and_waits_unless_told(bench):
    """Issue 62: the pooled check sized at unconfirmed positives counts each as missing. Its dry run gives both costs,
    the draw is refused with them and a sentence, and drawn only when told to go ahead."""
    first, _ = bench["queries"]
    more = [hit.image_id for hit in search(text=first.text, k=30)][20:26]
    label(bench["annotator"], first, more, "relevant")  # six single clicks, nobody's confirmation yet
    cost = draw(bench, dry_run=True).json()
    assert cost["unconfirmed"] == 6 and cost["found"] == 14
    assert cost["sample_after_confirmation"] < cost["sample"]
    before = database_snapshot()
    refused = draw(bench)
    assert refused.status_code == 409  # the state refuses it, not the body
    detail = refused.json()["detail"]
    assert "6 positives of the frames wait for an adjudicator's confirmation" in detail
    assert f"sample {cost['sample']:,} images" in detail
    assert f"it would sample {cost['sample_after_confirmation']:,}" in detail
    assert database_snapshot() == before
    drawn = draw(bench, with_unconfirmed=True)
    assert drawn.status_code == 201 and drawn.json()["sample"]["size"] == cost["sample"]


def test_a_draw_with_a_check_open_still_refuses_unknown_queries_and_an_empty_split(bench):
    """Issue 63: with a check open, a draw answered the open check whatever queries or split the body named."""
    assert draw(bench, split="val").status_code == 201
    assert draw(bench, split="val").status_code == 200  # continues the open one
    unknown = draw(bench, queries=[99999])
    assert unknown.status_code == 409 and "99999" in unknown.json()["detail"]
    empty = draw(bench, split="test")
    assert empty.status_code == 409 and "No query is in the test split" in empty.json()["detail"]
    assert CompletenessCheck.objects.filter(claim="benchmark").count() == 1


def test_a_query_the_benchmark_check_samples_does_not_read_no_check_yet(bench):
    """Issue 64: the per-query box said "no check yet" while a benchmark check sampled the query."""
    first, _ = bench["queries"]
    before = api_for(bench["annotator"]).get(f"/api/queries/{first.pk}/completeness/").json()
    assert before["status"] == "no_check" and before["next"].startswith("No check yet")
    assert draw(bench, split="val").status_code == 201
    during = api_for(bench["annotator"]).get(f"/api/queries/{first.pk}/completeness/").json()
    assert during["status"] == "no_check"
    assert "the open benchmark check 1 samples this query's frame" in during["next"]


def test_a_decision_that_loses_the_race_reads_the_one_that_won(bench):
    """Two writes settle the last pair together: the one that finds the check decided already leaves the stored
    decision as it is and reads it (its caller, the write's answer, must not say "checking")."""
    draw(bench, split="val")
    stale = CompletenessCheck.objects.filter(
        claim="benchmark"
    ).get()  # the losing write's copy, read before the winner decided
    CompletenessCheck.objects.filter(claim="benchmark").filter(pk=stale.pk).update(
        status=CompletenessCheck.Status.CERTIFIED, recall_lower_bound=0.9123, decided_at=stale.created_at
    )
    checks.decide(stale, sample_progress.progress(stale))
    assert stale.status == CompletenessCheck.Status.CERTIFIED and stale.recall_lower_bound == 0.9123
    stored = CompletenessCheck.objects.filter(claim="benchmark").get()
    assert stored.recall_lower_bound == 0.9123 and stored.decided_at == stale.created_at  # not decided again
