"""The stopping-rule simulation (evaluation/certification.py): its team judges as the tool's confirmation does, its
check is the tool's (frame, size, claim), and the command reports each rule against the truth."""

import json
import math

import numpy as np
import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from annotator import facade  # its tested_at, imported bare, would be collected as a test
from evaluation import benchmark_sim, certification, simulation, worlds


def test_a_positive_counts_when_the_second_judgment_agrees_or_the_adjudicator_says_so():
    truth = {1, 2, 3}
    wrong_first = {2, 10, 12}.__contains__  # the reviewer is wrong on 2 (a positive), 10 and 12 (negatives)
    wrong_second = {3, 12}.__contains__
    team = certification.Team(truth, (wrong_first, wrong_second, None))
    assert [team.judge(i) for i in (1, 2, 3, 10, 11, 12)] == [True, False, True, True, False, True]
    for image_id in (1, 3, 10, 12):
        team.confirm(image_id)
    assert team.final(1) and team.final(3)  # 3: the second was wrong, the adjudicator right
    assert not team.final(10)  # the reviewer's mistaken click, overturned
    assert team.final(12)  # two mistaken clicks agree: a false positive survives (as in the tool)
    assert not team.final(2)  # a missed positive stays missed: nothing confirms a "not relevant"
    assert team.found() == 2 and team.spent == 6 + 4 + 2


def test_a_sampled_image_gets_two_looks_and_the_adjudicator_decides_any_positive_vote():
    truth = {1, 2}
    wrong_first, wrong_second = {2, 10}.__contains__, {2, 10, 11}.__contains__
    team = certification.Team(truth, (wrong_first, wrong_second, None))  # a perfect adjudicator
    assert team.look_twice(1)  # both say relevant; the adjudicator confirms
    assert not team.look_twice(2)  # both miss it: lost (what the test's miss rate bounds)
    assert not team.look_twice(10)  # both wrongly say relevant; the adjudicator overturns the shared mistake
    assert not team.look_twice(11) and not team.look_twice(12)
    assert team.spent == 5 + 5 + 3  # first looks, second looks, adjudications (1, 10, 11)


def test_a_fresh_look_ignores_the_reviews_judgment_and_the_adjudicator_decides_a_positive_look():
    def wrong_on(ids):
        return lambda image_id: image_id in ids

    team = certification.Team({1, 2, 3}, (wrong_on({1, 2}), None, None))
    assert not team.judge(1)  # the review missed positive 1
    assert team.look_fresh(1)  # the second annotator's fresh look finds it, the adjudicator confirms it
    assert not team.look_fresh(2)  # never judged: the first annotator's look is fresh, and misses it
    assert team.look_fresh(3) and team.spent == 3 + 1 + 2  # first looks at 1, 2, 3; the second's at 1; two decisions


def test_a_recheck_looks_through_further_annotators_then_the_adjudicator_then_waits():
    """A pair that every earlier look judged gets its fresh look from the next person who has not (further
    annotators, then the adjudicator), as the tool's check candidates give it; once everyone has, the tool's check
    waits for someone new and the simulated one stops undecided."""
    team = certification.Team({1}, (lambda image_id: True, lambda image_id: True, None, lambda image_id: False))
    assert not team.judge(1) and not team.look_fresh(1)  # the review and the second annotator both miss it
    assert team.look_fresh(1) and team.later == {3: {1}}  # the third annotator's look finds it; adjudicated
    assert not team.look_fresh(2)  # image 2: the reviewer's first look, wrongly relevant, overturned
    assert team.spent == 2 + 1 + 1 + 1 + 1  # first looks at 1, 2; the second's at 1; the third's; two decisions
    assert team.look_fresh(1)  # the adjudicator's own look at 1 (a perfect one: it finds it)
    assert team.later == {3: {1}, 2: {1}}
    with pytest.raises(certification.NoFreshLook, match="everyone on the team has judged image 1"):
        team.look_fresh(1)


def test_a_run_stops_each_rule_and_the_check_is_the_tools():
    world = worlds.team_world(kinds=("easy", "tiny"), per_kind=1, images=8000, seed=3)
    options = certification.Settings(noise=0.05, target=0.8, depth=300, max_review=1500, estimate=False)
    runs = [certification.run(world, query_id, 3, options) for query_id in sorted(world.positives)]
    for found in runs:
        stops = found["stops"]
        assert "oracle" in stops and stops["oracle"]["recall"] >= 0.8
        if "check" in stops:
            check = stops["check"]
            assert check["certified"] and check["bound"] >= 0.8 and check["labels"] >= stops["oracle"]["labels"]
    summary = certification.summary(runs, options)
    assert summary["rules"]["oracle"]["stopped"] == 2 and summary["rules"]["oracle"]["held_share"] == 1.0
    low, high = summary["rules"]["oracle"]["held_interval"]
    assert 0 < low < 1 == high  # Clopper-Pearson over two runs that held
    assert "check" in certification.format_summary(summary)


def test_the_simulated_check_draws_what_the_tool_would():
    world = worlds.team_world(kinds=("easy",), per_kind=1, images=6000, seed=1)
    team = certification.Team(world.positives[1], (None, None, None))  # a perfect team
    for image_id in np.argsort(-(world.vectors @ world.texts[1]))[:200]:
        team.judge(int(image_id))
    frame = certification._frame(world, 1, team, 300).tolist()
    found = sum(1 for i in frame if i in team.first and team.final(i))
    population = len(frame) - found  # every image of the frame but its positives, judged or not
    options = certification.Settings(target=0.9, depth=300)
    result = certification._check(world, 1, team, 2, options, np.random.default_rng(0), np.asarray(frame))
    confidence = facade.tested_at(0.95, 2)
    rate = facade.pair_miss_rate(facade.PER_LOOK, 1, facade.ADJUDICATOR)  # one fresh look, as the tool (issue 62)
    size = facade.check_size(found, population, 0.9, confidence, rate, tolerate=1)
    assert result["sample"] == size
    assert result["found"] == found  # a perfect team confirms every positive
    decided = facade.claim(found, population, size, result["positives"], 0.9, confidence, rate)
    assert (result["certified"], result["bound"]) == (decided.certified, decided.recall_lower_bound)
    assert result["certified"] == (result["bound"] >= 0.9)


def test_the_default_frame_is_twice_the_judged_depth_at_least_five_hundred():
    assert certification.default_depth(0) == 500 and certification.default_depth(249) == 500
    assert certification.default_depth(700) == 1500 and certification.default_depth(1234) == 2500


def test_the_command_reports_each_rule_and_refuses_bad_settings(tmp_path, capsys):
    out = tmp_path / "stopping.json"
    call_command(
        "simulate_labeling", "--team-world", "--completeness", "--kinds", "easy", "--per-kind", "1", "--target", "0.8",
        "--noise", "0.05", "--depth", "300", "--max-labels", "800", "--no-estimate", "--json", str(out),
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert "check" in printed and "oracle" in printed and "inquire" in printed
    result = json.loads(out.read_text())
    assert result["settings"]["target"] == 0.8 and len(result["runs"]) == 1
    for arguments, words in [
        (["--team-world", "--completeness", "--target", "1"], "below 1"),
        (["--synthetic", "--completeness"], "--team-world"),
        (["--team-world", "--completeness", "--depth", "-1"], "--depth"),
        (["--team-world", "--completeness", "--confidence", "1.5"], "--confidence"),
    ]:
        with pytest.raises(CommandError, match=words):
            call_command("simulate_labeling", *arguments)


def test_the_command_measures_both_claims_the_way_a_team_reaches_them(tmp_path, capsys):
    """`--claims QUERIES`: the benchmark's claim and each query's, over INQUIRE-shaped worlds, each held against
    the truth and its labels beside the summed oracle's."""
    out = tmp_path / "claims.json"
    call_command(
        "simulate_labeling", "--team-world", "--completeness", "--claims", "5", "--target", "0.8",
        "--noise", "0.05", "--json", str(out),
    )  # fmt: skip
    printed = capsys.readouterr().out
    assert "benchmark claim (micro-recall >= 80%)" in printed and "per-query claims (recall >= 80%)" in printed
    result = json.loads(out.read_text())
    run = result["benchmark_runs"][0]
    assert run["queries"] == 5 and run["labels"] >= run["review"] > 0 and run["oracle"] > 0
    if run["certified"]:
        assert run["bound"] >= 0.8
    assert len(result["query_runs"]) == 5
    for record in result["query_runs"]:
        assert record["labels"] > 0 and (not record["certified"] or record["checks"] >= 1)
    with pytest.raises(CommandError, match="--claims"):
        call_command("simulate_labeling", "--team-world", "--completeness", "--claims", "0")


def test_an_inquire_world_has_lognormal_positives_in_the_five_kinds():
    world = worlds.inquire_world(queries=40, seed=3)
    counts = sorted(len(positives) for positives in world.positives.values())
    assert len(world.positives) == 40 and set(world.kinds.values()) == set(worlds.KINDS)
    assert 25 <= counts[len(counts) // 2] <= 80  # median about 46
    assert counts[0] >= 1 and counts[-1] > 2 * counts[len(counts) // 2]  # a long tail
    assert all(len(p) == len(set(p)) for p in world.positives.values())
    every = [i for p in world.positives.values() for i in p]
    assert len(every) == len(set(every))  # no image is a positive of two queries


def test_nested_benchmark_checks_fix_their_sizes_in_advance_and_look_at_each_pair_once():
    """Settings.extend: the k-th check labels a prefix of one random order, sizes fixed at the first draw (so each
    check's bound holds at its share of alpha whatever the earlier ones met), and a pair sampled by an earlier
    check is not paid for again."""
    nested = benchmark_sim.NestedChecks(
        found=10, owner=np.zeros(100), pairs=np.arange(100), order=np.arange(100), first=30, growth=1.5
    )
    assert [nested.size(k) for k in (1, 2, 3, 4)] == [30, 45, 68, 100]
    world = worlds.inquire_world(queries=5, median_positives=20, seed=1)
    for extend in (0.0, 1.5):
        run = benchmark_sim.benchmark_claim(world, 1, benchmark_sim.Settings(target=0.8, extend=extend))
        assert run["checks"] >= 1 and run["sampled"] >= 1
        # every sampled pair costs at least one look beyond the review's, and no pair is paid for twice
        assert run["labels"] >= run["review"] + run["sampled"]
        assert run["frame_oracle"] > 0 and run["least_check"] <= run["sampled"]
        # The valid clairvoyant floor: a claim that certifies 90% of the time needs the frames' recall at the target
        # or past it, so the floor's review alone is at least the frame oracle's, and it confirms what it counts.
        assert run["floor_recall"] >= 0.8 and run["floor"] >= run["frame_oracle"] + math.ceil(0.8 * run["in_frames"])
        # A clairvoyant may size its one check otherwise: the floor at each tolerance is kept, each a floor too.
        assert run["floors"][benchmark_sim.Settings().tolerate_share] == run["floor"]
        least = math.ceil(0.8 * run["in_frames"]) + run["frame_oracle"]
        assert all(floor is None or floor >= least for floor in run["floors"].values())


def test_the_pooled_review_gives_every_query_a_window_then_labels_where_the_positives_are():
    """The benchmark's pooled review rule (issue 62): a window for every query, then each batch to the query whose
    last window holds the most confirmed positives, until the last 200 labels over all queries are at most 5%
    confirmed relevant."""
    world = worlds.inquire_world(queries=5, median_positives=20, seed=3)
    options = benchmark_sim.Settings(pooled=True)
    runs = benchmark_sim._start(world, 3, options)
    order: list[tuple[int, int]] = []
    label = benchmark_sim.QueryRun.label

    def recording(run, count, target):  # the order the team labels in, over all queries
        before = len(run.order)
        label(run, count, target)
        order.extend((run.query_id, image_id) for image_id in run.order[before:])

    benchmark_sim.QueryRun.label = recording
    try:
        benchmark_sim.pooled_review(runs, options)
    finally:
        benchmark_sim.QueryRun.label = label
    assert all(len(run.order) >= benchmark_sim.POOLED_WINDOW for run in runs.values())  # a window each, first
    first = {query_id for query_id, _ in order[: len(runs) * benchmark_sim.POOLED_WINDOW]}
    assert first == set(runs)
    recent = order[-benchmark_sim.POOLED_WINDOW :]
    assert sum(runs[q].confirmed(i) for q, i in recent) / len(recent) <= options.dry  # stopped dry over all queries
    # After the first windows, each batch went to a query whose window held the most confirmed positives then:
    # the queries with the most positives got the most labels.
    labels = {q: len(run.order) for q, run in runs.items()}
    found = {q: sum(run.confirmed(i) for i in run.order) for q, run in runs.items()}
    assert max(labels, key=labels.get) == max(found, key=found.get)


def test_after_a_failed_check_a_query_is_reviewed_while_its_window_with_the_looks_yields():
    """The tool's per-query advice after a failed benchmark check, as the simulator's "advice" policy follows it: the
    window reads the check's looks at images nobody had judged after the review's own judgments, so a query whose
    looks met positives is reviewed until that window is dry again, and a query whose looks met none is not."""
    world = worlds.inquire_world(queries=3, median_positives=40, seed=1)
    options = benchmark_sim.Settings(after_failure="advice")
    runs = benchmark_sim._start(world, 1, options)
    benchmark_sim.first_review(runs, options)
    yielding_query, dry_query = 1, 2  # a hard query whose review found 2 of its 57 positives; one it found all in
    stopped = {q: len(run.order) for q, run in runs.items()}
    run = runs[yielding_query]
    unjudged_positives = [i for i in sorted(run.truth) if i not in run.team.first][:30]
    assert len(unjudged_positives) == 30
    for image_id in unjudged_positives:  # the check's looks: each found, and confirmed by the adjudicator
        run.team.look_fresh(image_id)
    benchmark_sim.after_failure(runs, options, {yielding_query: 30}, {yielding_query: unjudged_positives}, 400)
    benchmark_sim.after_failure(runs, options, {}, {dry_query: []}, 400)
    assert len(runs[dry_query].order) == stopped[dry_query]
    assert len(run.order) > stopped[yielding_query]
    recent = run.order[: stopped[yielding_query]] + unjudged_positives + run.order[stopped[yielding_query] :]
    window = recent[-options.window :]
    assert run.reads_dry(window, options, options.dry) or len(run.order) >= options.max_review
    assert not run.reads_dry((run.order[: stopped[yielding_query]] + unjudged_positives)[-options.window :], options, 0)


def test_a_query_is_reviewed_to_the_advices_first_judgments_then_until_its_last_window_reads_dry():
    """The simulator's team reads a ranking as the tool's advice does (annotator.completeness.advice): no yield before
    LEAST judgments (the benchmark's claim's; a query's own has its own), then the last WINDOW of them, at most 10%
    relevant; its review stops at the first batch where that holds, so a batch sooner it did not (too few judged, or
    the window still yielding)."""
    options = benchmark_sim.Settings(ranking="page")
    least = facade.ADVICE_LEAST
    assert (options.window, options.least_judged, options.query_least_judged) == (
        facade.ADVICE_WINDOW, least["benchmark"], least["query"]
    )  # fmt: skip
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    runs = benchmark_sim._start(world, 2, options)
    benchmark_sim.first_review(runs, options)
    for run in runs.values():
        judged = [run.team.first[i] for i in run.order]
        assert len(judged) >= options.least_judged and sum(judged[-options.window :]) <= 0.1 * options.window
        sooner = judged[: -options.batch]
        assert len(sooner) < options.least_judged or sum(sooner[-options.window :]) > 0.1 * options.window
    # The window alone (from the first judgment) stops sooner where a query's first stretch is thin.
    alone = benchmark_sim.Settings(ranking="page", least_judged=options.window)
    early = benchmark_sim._start(world, 2, alone)
    benchmark_sim.first_review(early, alone)
    assert any(len(early[q].order) < len(runs[q].order) for q in runs)


def test_a_team_that_reads_the_advice_every_few_labels_stops_inside_a_batch_where_it_reads_dry():
    """Settings.step: the reviewer labels the same page batches and reads the advice every `step` labels (the side
    pane's advice after each pause in saving), so its first review is the batch reader's cut short: a prefix of it,
    stopped at the first step where the window reads dry, a step sooner not, and within a batch of where the batch
    reader stopped."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=4)
    by_batch, by_step = benchmark_sim.Settings(ranking="page"), benchmark_sim.Settings(ranking="page", step=10)
    whole, stepped = benchmark_sim._start(world, 4, by_batch), benchmark_sim._start(world, 4, by_step)
    benchmark_sim.first_review(whole, by_batch)
    benchmark_sim.first_review(stepped, by_step)
    for query_id, run in stepped.items():
        order = run.order
        assert order == whole[query_id].order[: len(order)]
        assert 0 <= len(whole[query_id].order) - len(order) < by_batch.batch
        assert run.reads_dry(order[-by_step.window :], by_step, by_step.dry) and not run.loaded
        sooner = order[: -by_step.step]
        dry_sooner = run.reads_dry(sooner[-by_step.window :], by_step, by_step.dry)
        assert len(sooner) < by_step.least_judged or not dry_sooner
    assert any(len(stepped[q].order) < len(whole[q].order) for q in whole)  # here a query at 260, not 300


def test_with_the_pages_ranking_the_reviewer_labels_the_candidates_apis_batches():
    """Settings.ranking "page": the simulated reviewer labels what the candidates API would give (the page's batch
    rules over the world), batch after batch from the reviewer's own judgments (the labels the page shows its viewer,
    not the adjudicator's decisions on them), never an image twice."""
    world = worlds.inquire_world(queries=2, median_positives=30, seed=4)
    options = benchmark_sim.Settings(ranking="page")
    run = benchmark_sim._start(world, 4, options)[1]
    rank = simulation.world_ranker(world, 1)
    run.label(120, options.target)
    first = rank("feedback", [], [], set(), 50, [])
    assert run.order[:50] == first
    judged = run.order[:50]
    relevant = [i for i in judged if run.team.first[i]]
    assert any(not run.team.final(i) for i in relevant)  # a mistaken "relevant" the adjudicator overturned: still one
    recent = [(i, run.team.first[i]) for i in judged]
    second = rank("feedback", relevant, [i for i in judged if i not in relevant], set(judged), 50, recent)
    assert run.order[50:100] == second
    assert len(run.order) == 120 == len(set(run.order))


def test_a_check_sized_from_the_expected_misses_reads_the_last_windows_and_keeps_the_claim_valid():
    """Settings.sizing (measured in bench/RESULTS.md, not the tool's rule): the expected misses are the confirmed
    positives among each query's last 200 images of review (the window it was measured with), and a check sized
    from them tolerates as certify.tolerance_for_misses says; its claims still hold."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    options = benchmark_sim.Settings(sizing="misses")
    runs = benchmark_sim._start(world, 2, options)
    benchmark_sim.first_review(runs, options)
    expected = benchmark_sim.expected_misses(runs)
    by_hand = sum(run.confirmed(i) for run in runs.values() for i in run.order[-200:])
    assert expected == by_hand and expected == benchmark_sim.expected_misses(runs, window=200)
    assert benchmark_sim.expected_misses(runs, window=10) <= expected
    sized = {}
    for sizing in ("share", "misses", "larger"):
        run = benchmark_sim.benchmark_claim(world, 2, benchmark_sim.Settings(sizing=sizing))
        assert run["checks"] >= 1 and (run["held"] or not run["certified"])
        sized[sizing] = run["first_check"]["sample"]
        # The positives its pairs hid at the first draw (the bench's clairvoyant count): some, and no more than the
        # frames' positives it had not confirmed (the frames only grow after it).
        hidden = run["first_check"]["hidden"]
        assert 0 < hidden <= run["in_frames"] - run["first_check"]["found"], (hidden, run["in_frames"])
    assert sized["share"] != sized["misses"]  # this world: the two rules tolerate differently
    assert sized["larger"] == max(sized["share"], sized["misses"])  # the same first state: the larger tolerance


def test_a_check_is_looked_at_in_its_order_until_it_has_counted_more_than_it_may():
    """Settings.curtail, as the tool decides a check (annotator.completeness.checks.failed_already): the looks stop
    once more positives are counted than a certificate allows, and the pairs after are neither looked at nor paid
    for; without it every pair is."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    spent, seen = {}, {}
    for curtail in (0, None):
        options = benchmark_sim.Settings()
        runs = benchmark_sim._start(world, 2, options)  # no review yet: the default frames hide their positives
        _, owner, pairs = benchmark_sim._pooled(runs)
        hiding = [n for n in range(len(pairs)) if int(pairs[n]) in runs[int(owner[n])].truth]
        others = [n for n in range(len(pairs)) if n not in set(hiding)]
        chosen = np.asarray(others[:5] + hiding[:3] + others[5:30])  # positives at positions 5, 6 and 7
        before = sum(run.team.spent for run in runs.values())
        met, _, _, seen[curtail] = benchmark_sim._look_at_sample(runs, chosen, owner, pairs, 0, options, curtail)
        spent[curtail] = sum(run.team.spent for run in runs.values()) - before
        if curtail is not None:
            assert sum(met.values()) == 1 and seen[curtail] in (6, 7, 8)  # the first positive a look counted
    assert seen[None] == 33 > seen[0] and spent[None] > spent[0] >= seen[0]


def test_a_recheck_sized_from_the_failed_check_tolerates_what_it_says_still_hides():
    """Settings.recheck (measured in bench/RESULTS.md, not the tool's rule): after a failed check, "estimate" sizes
    the next to tolerate what the failed check says the frames still hide (facade.hiding_estimate less what was
    confirmed since), never less than the rule for any check; "first" ignores the failed check."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    options = benchmark_sim.Settings(recheck="estimate")
    runs = benchmark_sim._start(world, 2, options)
    benchmark_sim.first_review(runs, options)
    found, _, pairs = benchmark_sim._pooled(runs)
    confidence, rate = facade.tested_at(0.95, 2), benchmark_sim.miss_rate(options.design)
    rule = benchmark_sim._tolerance(runs, found, len(pairs), confidence, rate, options)
    failed = benchmark_sim.FailedCheck(found - 5, len(pairs) + 5, 9, 400, True)  # 5 confirmed since it was drawn
    sized = benchmark_sim._tolerance(runs, found, len(pairs), confidence, rate, options, failed)
    hiding = facade.hiding_estimate(9, 400, len(pairs) + 5, rate, True, 5)
    assert sized == max(rule, facade.tolerance_for_misses(found, len(pairs), 0.9, confidence, rate, hiding)) > rule
    first = benchmark_sim.Settings(recheck="first")
    assert benchmark_sim._tolerance(runs, found, len(pairs), confidence, rate, first, failed) == rule
    quiet = benchmark_sim.FailedCheck(found - 5, len(pairs) + 5, 0, 400, False)  # it met nothing: nothing more
    assert benchmark_sim._tolerance(runs, found, len(pairs), confidence, rate, options, quiet) == rule


def test_a_querys_check_is_looked_at_until_it_has_counted_more_than_it_may():
    """A query's own check is decided as the benchmark's is, and as the tool decides every check: in the sample's
    order until more positives are counted than a certificate allows, the images after neither looked at nor paid
    for; without curtailing every image is. The first checks decide the same either way (curtailing only stops a
    check that has already failed), so the queries certified by their first check cost the same to the label."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    looked, spent = {}, {}
    for curtail in (0, None):
        run = benchmark_sim._start(world, 2, benchmark_sim.Settings())[1]  # no review yet: its frame hides them all
        hiding = sorted(run.truth)[:3]
        others = [i for i in run.freeze().tolist() if i not in run.truth][:30]
        sample = others[:5] + hiding + others[5:]  # positives at positions 5, 6 and 7
        before = run.team.spent
        looked[curtail] = benchmark_sim._met(run, sample, benchmark_sim.Settings(), curtail)
        spent[curtail] = run.team.spent - before
    assert looked[0][0] == 1 and looked[0][1] in (6, 7, 8)  # stops past the first positive a look counted
    assert looked[None][0] >= 2 and looked[None][1] == 33 and spent[None] > spent[0]  # every image looked at

    claims = {}
    for curtail in (True, False):
        options = benchmark_sim.Settings(curtail=curtail, ranking="page", annotators=4)
        claims[curtail] = {r["query_id"]: r for r in benchmark_sim.per_query_claims(world, 2, options)}
    once = [q for q, r in claims[False].items() if r["certified"] and r["checks"] == 1]
    assert once and once == [q for q, r in claims[True].items() if r["certified"] and r["checks"] == 1]
    assert all(claims[True][q]["labels"] == claims[False][q]["labels"] for q in once)
    failed_first = [q for q in claims[False] if q not in once]
    assert failed_first  # this world: a first check that fails, so that curtailing has something to stop


def test_a_quiet_window_reads_dry_from_its_first_judgments_when_asked():
    """Settings.quiet_from (measured in bench/RESULTS.md, not the tool's rule): a query also stops from that many
    judgments on once it has confirmed a positive and its last window holds none; a batch sooner neither rule held."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    options = benchmark_sim.Settings(ranking="page", quiet_from=100)
    runs = benchmark_sim._start(world, 2, options)
    benchmark_sim.first_review(runs, options)

    def dry(order: list[int]) -> bool:
        judged = [run.team.first[i] for i in order]
        return len(order) >= options.least_judged and sum(judged[-options.window :]) <= 0.1 * options.window

    def quiet(order: list[int]) -> bool:
        return (
            len(order) >= 100
            and not any(map(run.confirmed, order[-options.window :]))
            and any(map(run.confirmed, order))
        )

    for run in runs.values():
        assert dry(run.order) or quiet(run.order)
        assert not dry(run.order[: -options.batch]) and not quiet(run.order[: -options.batch])
    assert any(len(run.order) < options.least_judged for run in runs.values())  # the quiet window stopped one


def test_the_simulators_benchmark_tolerance_is_the_tools():
    """The simulator sizes a benchmark check by the tool's rule (annotator.completeness.checks, through the facade):
    a tenth of the misses the target allows, at most 20, by default; other shares measured with the same rule."""
    from annotator.completeness import checks

    default = benchmark_sim._tolerated(benchmark_sim.Settings())
    for found in (0, 9, 10, 95, 400, 1999, 2000, 5000, 10**6):
        assert default(found) == checks.tolerance(checks.BENCHMARK, found, 0.9)
        assert benchmark_sim._shared(5, 0.9)(found) == min(20, facade.missing_at_target(found, 0.9) // 5)
        assert benchmark_sim._shared(0, 0.9)(found) == 0
    assert default(10**6) == 20 and default(400) == 4


def test_a_querys_check_sized_to_tolerate_more_positives_draws_a_larger_sample_after_the_same_review(monkeypatch):
    """Settings.query_tolerate (the tool's checks.TOLERATE, 3, by default; 1, then 2, before): a query's
    first check is drawn after the same review whatever it tolerates, sized by certify.check_size for that many
    positives, so one tolerating two samples more of a frame where some check can. Each record keeps the query's
    floor at every tolerance; its "floor" is that of a check sized as the run's."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    first: dict[int, dict[int, tuple[int, int, int, int]]] = {}
    real = benchmark_sim._met
    for tolerate in (1, 2):
        drawn: dict[int, tuple[int, int, int, int]] = {}

        def met(run, sample, options, curtail, drawn=drawn):
            found = len(run.confirm())  # confirmed once: asking again adjudicates nothing more
            drawn.setdefault(run.query_id, (len(run.order), found, len(run.freeze()) - found, len(sample)))
            return real(run, sample, options, curtail)

        monkeypatch.setattr(benchmark_sim, "_met", met)
        # One stage: the whole sample is what the first look at it reads (a first stage is read before it).
        options = benchmark_sim.Settings(ranking="page", annotators=4, query_tolerate=tolerate, staged=False)
        records = benchmark_sim.per_query_claims(world, 2, options)
        first[tolerate] = drawn
        assert all(r["floor"] == r["floors"][tolerate] and set(r["floors"]) == {0, 1, 2, 3} for r in records)
    confidence, rate = facade.tested_at(0.95, 1), certification.miss_rate("fresh")
    assert first[1].keys() == first[2].keys() and first[1]
    for tolerate, drawn in first.items():
        for _, found, population, sample in drawn.values():
            assert sample == facade.check_size(found, population, 0.9, confidence, rate, tolerate)
    assert all(first[2][q][:3] == first[1][q][:3] for q in first[1])  # the same review, frame and positives
    assert any(first[2][q][3] > first[1][q][3] for q in first[1])


def test_the_reviewers_positives_are_confirmed_as_labeled_and_the_frames_drawn_are_computed_from_them():
    """The tool's flow (Settings.confirm_as_labeled): each positive the reviewer finds goes to the adjudicator as it
    is labeled, so a draw finds nothing left to confirm and its frame's learned ranking is computed from confirmed
    labels, as the server computes it (frames._top reads the final labels). The reviewer's own ranking learns from
    their own judgments either way (the labeling page shows a viewer their own), so the review is the same.
    Confirmed at the draw instead (before 2026-12-02), the frames came from unconfirmed labels."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    orders, frames = {}, {}
    for as_labeled in (True, False):
        options = benchmark_sim.Settings(ranking="page", annotators=4, step=10, confirm_as_labeled=as_labeled)
        runs = benchmark_sim._start(world, 2, options)
        benchmark_sim.first_review(runs, options)
        for run in runs.values():
            called = [i for i in run.team.first if run.team.first[i]]
            assert called and all((i in run.team.third) == as_labeled for i in called)
            before = run.team.spent
            run.confirm()
            assert (run.team.spent == before) == as_labeled  # at the draw: nothing waits, or every positive does
        orders[as_labeled] = {q: run.order for q, run in runs.items()}
        frames[as_labeled] = {q: run.freeze().tolist() for q, run in runs.items()}
        wrong = [i for run in runs.values() for i in run.team.first if run.team.first[i] and i not in run.truth]
        assert wrong  # the reviewer's mistakes are among the positives confirmed (and overturned)
    assert orders[True] == orders[False]
    assert frames[True] != frames[False]


def test_a_querys_draw_no_sample_could_certify_leaves_its_frame_growing_and_spends_no_alpha(monkeypatch):
    """The tool refuses a draw no sample could certify (no check is made, no frame frozen) and its next check is
    still check 1. The simulator's team does the same: refused once, it labels on, and draws over the default frame
    of that later moment, tested at the first check's share of alpha (before: frozen at the refusal, tested at the
    second check's share)."""
    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    real_size, real_met = benchmark_sim.check_size, benchmark_sim._met
    sized: list[tuple[int, float]] = []  # (judgments so far, the confidence asked) of the first query's tries
    refused: list[np.ndarray] = []  # the first query's frame when its first draw was refused
    drawn: dict[int, tuple[np.ndarray, set[int]]] = {}  # query: (the frame drawn over, the images judged by then)

    def refused_first(found, population, target, confidence, rate, tolerate=0):
        if not drawn:  # the first query's tries, before its first draw (valid_floor's calls come after it)
            sized.append((len(run_of[0].order), confidence))
            if len(sized) == 1:
                refused.append(run_of[0].frame_now())
                return None
        return real_size(found, population, target, confidence, rate, tolerate)

    def met(run, sample, options, curtail):
        drawn.setdefault(run.query_id, (run.freeze(), set(run.team.first)))
        return real_met(run, sample, options, curtail)

    run_of = []
    real_start = benchmark_sim._start
    monkeypatch.setattr(benchmark_sim, "_start", lambda *a: run_of.extend((r := real_start(*a)).values()) or r)
    monkeypatch.setattr(benchmark_sim, "check_size", refused_first)
    monkeypatch.setattr(benchmark_sim, "_met", met)
    one_stage = benchmark_sim.Settings(ranking="page", annotators=4, staged=False)  # sized by check_size alone
    records = benchmark_sim.per_query_claims(world, 2, one_stage)
    first = run_of[0].query_id
    (refused_at, refused_confidence), (drawn_at, drawn_confidence) = sized[0], sized[1]
    assert refused_confidence == drawn_confidence == facade.tested_at(0.95, 1)
    assert drawn_at > refused_at  # labeled on after the refusal
    frame, judged = drawn[first]
    assert not np.array_equal(frame, refused[0]) and judged <= set(frame.tolist())  # the frame of the draw's moment
    assert records[0]["query_id"] == first and records[0]["checks"] >= 2  # the refusal counts as a try


def test_the_per_query_summary_says_the_ratio_with_and_without_the_queries_left_uncertified():
    """A query the team left uncertified spent less than its floor: the summary's least-floor ratio counts it (as
    before), and says the ratio over the certified queries beside it."""
    record = {"seed": 0, "held": True, "oracle": 100}
    queries = [
        {**record, "query_id": 1, "certified": True, "labels": 300, "floor": 200, "floors": {0: 150, 3: 200}},
        {**record, "query_id": 2, "certified": False, "labels": 100, "floor": 400, "floors": {0: 400}},
    ]
    summary = benchmark_sim._query_summary(queries)
    assert summary["median_ratio_to_least_floor"] == pytest.approx(400 / 550, abs=1e-3)  # rounded to 3 places
    assert summary["median_ratio_to_least_floor_certified"] == pytest.approx(2.0)


def test_a_querys_check_in_two_stages_decides_on_its_first_pairs_when_they_meet_none():
    """Settings.first_stage_share (measured, not the tool's): a query's check as a double sampling plan. Its first
    stage, the sample's first pairs, is sized to certify on meeting none at its share of the check's alpha; the whole
    sample to tolerate the tool's count at the rest, so the two stages err at most the check's alpha together. A
    first stage that meets none certifies the claim without the rest being looked at: cheaper than the one stage
    after the same review; one that meets a positive looks on through the rest."""
    confidence, rate = facade.tested_at(0.95, 1), certification.miss_rate("fresh")
    two = benchmark_sim.Settings(ranking="page", annotators=4, first_stage_share=0.5)
    (first, first_at), (size, rest_at) = benchmark_sim._stages(46, 1500, confidence, rate, two)
    assert math.isclose((1 - first_at) + (1 - rest_at), 1 - confidence)
    assert first == facade.check_size(46, 1500, 0.9, first_at, rate, 0) < size
    assert size == facade.check_size(46, 1500, 0.9, rest_at, rate, 3)
    one = benchmark_sim._stages(46, 1500, confidence, rate, benchmark_sim.Settings(staged=False))
    assert one == ((0, confidence), (facade.check_size(46, 1500, 0.9, confidence, rate, 3), confidence))

    world = worlds.inquire_world(queries=4, median_positives=30, seed=2)
    records = {}
    for options in (benchmark_sim.Settings(ranking="page", annotators=4, staged=False), two):
        claims = benchmark_sim.per_query_claims(world, 2, options)
        records[options.first_stage_share] = {r["query_id"]: r for r in claims}
    staged = [q for q, r in records[0.5].items() if r["each_check"] and r["each_check"][0].get("stage") == 1]
    assert staged and all(records[0.5][q]["certified"] for q in staged)
    # The same review drew both: the one-stage check certified by its first draw cost more.
    same = [q for q in staged if records[0.0][q]["checks"] == 1 and records[0.0][q]["certified"]]
    assert same and all(records[0.5][q]["labels"] < records[0.0][q]["labels"] for q in same)
    assert all(records[0.5][q]["review"] == records[0.0][q]["review"] for q in same)


def test_the_tools_check_in_two_stages_certifies_on_its_first_pairs_and_costs_no_more_than_one_stage():
    """Settings.staged (the tool's: certify.staged_sizes): a query's check keeps one stage's sample and test, and its
    first pairs certify when they count no positive. After the same review the first draw samples the same pairs in
    both, so a query whose first check certified in one stage costs no more in two, and less where its first stage
    counted none; every claim certified in two stages holds."""
    confidence, rate = facade.tested_at(0.95, 1), certification.miss_rate("fresh")
    (first, tested), (size, at) = benchmark_sim._stages(46, 1500, confidence, rate, benchmark_sim.Settings())
    assert tested is None and at == confidence and 0 < first < size
    assert (first, size) == facade.staged_sizes(46, 1500, 0.9, confidence, rate, 3)
    world = worlds.inquire_world(queries=6, median_positives=30, seed=3)
    records = {}
    for staged in (False, True):
        options = benchmark_sim.Settings(ranking="page", annotators=4, staged=staged, coupled_draws=True)
        records[staged] = {r["query_id"]: r for r in benchmark_sim.per_query_claims(world, 3, options)}
    by_first = [q for q, r in records[True].items() if any(c.get("stage") == 1 for c in r["each_check"])]
    assert by_first, "some query's first stage counts none"
    once = [q for q, r in records[False].items() if r["checks"] == 1 and r["certified"]]
    assert once and all(records[True][q]["labels"] <= records[False][q]["labels"] for q in once)
    assert any(records[True][q]["labels"] < records[False][q]["labels"] for q in once if q in by_first)
    assert all(records[True][q]["review"] == records[False][q]["review"] for q in once)
    assert all(r["held"] for r in records[True].values() if r["certified"])


def test_the_coupled_order_is_random_for_each_check_and_keeps_a_pair_in_place_whatever_else_is_drawn_from():
    """benchmark_sim.coupled_order (common random numbers between the simulator and the server): each pair's place
    comes from a priority of its own, so a frame a few pairs larger draws nearly the same sample, where a permutation
    of it shares nothing; over seeds (and over checks) a pair's place is uniform, and the checks of one seed differ."""
    owners, images = np.zeros(1000, dtype=np.int64), np.arange(1000, dtype=np.int64)
    first = benchmark_sim.coupled_order(3, 1, owners, images)[:100]
    assert sorted(first.tolist()) != list(range(100)) and len(set(first.tolist())) == 100
    larger = benchmark_sim.coupled_order(3, 1, np.zeros(1010, dtype=np.int64), np.arange(1010, dtype=np.int64))
    assert len(set(first.tolist()) & set(larger[:100].tolist())) >= 95
    assert len(set(first.tolist()) & set(benchmark_sim.coupled_order(3, 2, owners, images)[:100].tolist())) < 30
    assert len(set(first.tolist()) & set(benchmark_sim.coupled_order(3, 1, owners + 1, images)[:100].tolist())) < 30
    orders = [benchmark_sim.coupled_order(seed, 1, owners[:20], images[:20]) for seed in range(4000)]
    places = [int(np.flatnonzero(order == 0)[0]) for order in orders]
    counts = np.bincount(places, minlength=20)
    assert counts.min() > 140 and counts.max() < 260  # 200 expected in each place
