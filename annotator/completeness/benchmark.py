"""The benchmark's completeness claim: one random check over the union of many queries' frames.

A per-query claim at 90% costs a sample that tolerates a tenth of the query's positives missing: for a query of
46 positives, about 5, so a check sees most of a small frame. Over a benchmark the misses a claim tolerates grow
with the whole benchmark, so one pooled check is cheap per query. Staff choose the queries (all, a split, or a
list); each query's frame is its frozen frame (annotator.completeness.frames), and a simple random sample is drawn
from the union of the (query, image) pairs that are not confirmed positives. Each sampled pair gets one
fresh look, blind, and is adjudicated where the look says relevant, through the query's normal "completeness check"
ranking (annotator.completeness.sampled), exactly as a query's own check: it is the same check, of many strata
(annotator.completeness.checks draws and decides both). This module says the benchmark's claim. The claim
(certify.claim over the pooled counts) is

    micro-recall >= T with confidence 1 - alpha over these N queries' frames,

micro-recall being every positive found in the frames over every positive in them; positives outside the frames
are not bounded. Per query the same sample, restricted to its pairs, is a simple random sample of them given its
size, so it gives an interval of that query's recall (certify.recall_interval): reported, never certified.
Benchmark checks spend alpha as a query's checks do (certify.tested_at, by their ordinal). No peer or paper we
found offers a benchmark-level completeness certificate; the statistics are Callaghan and Müller-Hansen's test
(annotator.completeness.certify) applied to the pooled frame.
"""

from typing import Any

from annotator.completeness import certify, checks, looks
from annotator.completeness.check_requests import CheckRequest
from annotator.completeness.frames import unpack
from annotator.completeness.sample_progress import CheckProgress, Progress, progress, withheld_figures
from annotator.models import CheckStratum, CompletenessCheck, Query


def certified_over(query: Query) -> bool:
    """Whether the latest benchmark check certified its claim over a frame of `query`."""
    check = checks.latest()
    if check is None or check.status != CompletenessCheck.Status.CERTIFIED:
        return False
    return check.strata.filter(query=query).exists()


def open_words(check: CompletenessCheck, asked: CheckRequest) -> str:
    """Why nothing was drawn: the open check, its target and scope beside the one asked for."""
    same = (asked.target, asked.confidence, asked.scope) == (check.target_recall, check.confidence, check.scope)
    said = f"Benchmark check {check.ordinal} is open (target {check.target_recall:.0%} at {check.confidence:.0%} "
    said += f"confidence over {check.scope}): label its pairs before drawing another. "
    if same:
        return said + "It is the check you asked for."
    return said + (
        f"Nothing was drawn for the target {asked.target:.0%} at {asked.confidence:.0%} confidence over {asked.scope} "
        "as you asked; draw it once this check is decided."
    )


def claim_words(check: CompletenessCheck, queries: int) -> str:
    """The one sentence the benchmark claim is said in, everywhere (API, dashboard, release card, croissant.json)."""
    percent, sure = f"{check.target_recall:.0%}", f"{check.confidence:.0%}"
    scope = (
        f"over the frames of {queries} queries ({check.scope}; benchmark check {check.ordinal}, tested at "
        f"{check.tested_at:.2%}, {looks.assumption_words(check.looks, check.per_look_miss_rate, check.miss_rate)}); "
        "positives outside the frames: not bounded"
    )
    if check.status == CompletenessCheck.Status.CERTIFIED:
        return f"Micro-recall is at least {percent} with {sure} confidence {scope}."
    if check.status == CompletenessCheck.Status.NOT_CERTIFIED:
        return f"Not certified: micro-recall at least {percent} with {sure} confidence could not be claimed {scope}."
    return f"Checking whether micro-recall is at least {percent} with {sure} confidence {scope}."


def _query_row(
    check: CompletenessCheck, stratum: CheckStratum, sample: Progress | None, intervals: bool, together: float,
    early: bool = False,
) -> dict[str, Any]:  # fmt: skip
    """One query's row of the report: its frame, what was found, its share of the sample, and (once the check is
    decided on its whole sample: an interval needs it looked at) its recall interval, also at `together`."""
    size = sample.size if sample else 0
    if sample and early:  # decided early: its pairs not looked at bound nothing
        size = sample.labeled - len(sample.adjudication)
    met = sample.positives if sample else 0
    found = len(unpack(stratum.found_ids))
    recall = None
    if intervals:
        low, high = certify.recall_interval(found, stratum.sampled_from, size, met, check.confidence, check.miss_rate)
        corrected, _ = certify.recall_interval(found, stratum.sampled_from, size, met, together, check.miss_rate)
        recall = {
            "low": round(low, 4), "high": round(high, 4), "confidence": check.confidence,
            "low_corrected": round(corrected, 4),
        }  # fmt: skip
    return {
        "query": stratum.query_id,
        "frame": {"kind": stratum.frame_kind, "depth": stratum.frame_depth, "size": stratum.frame_size},
        "found": found,
        "sample_size": size,
        "positives_in_sample": met,
        "sampled_from": stratum.sampled_from,
        "recall": recall,
    }


def _above(rows: list[dict[str, Any]], bound: str, target: float) -> int:
    return sum(1 for row in rows if row["recall"][bound] >= target)


def report(check: CompletenessCheck, *, withheld: str = "") -> dict[str, Any]:
    """The benchmark claim as the API, the dashboard and the releases give it. `withheld`: why the viewer may not
    read the sample's positives (they judge some of its pairs blind); those figures are then None."""
    now = progress(check)
    decided = check.status != CompletenessCheck.Status.CHECKING
    strata = list(check.strata.defer("frame_ids").order_by("query_id"))  # a row names its frame, never its ids
    # Bonferroni over the queries: each one-sided lower bound at alpha / N, so that every query counted above the
    # target is so with the claim's confidence together (the two-sided interval at 1 - 2 alpha / N has that low end).
    together = 1 - 2 * (1 - check.confidence) / max(1, len(strata))
    # A check decided early met its positives by stopping at one: a sample of a size that depended on what it met
    # gives no per-query interval (its low end of what is missing would be too high), so none is shown.
    early = checks.decided_early(check, now.size)
    intervals = decided and not early
    rows = [
        _query_row(check, stratum, now.per_query.get(stratum.query_id), intervals, together, early)
        for stratum in strata
    ]
    shown: dict[str, Any] = {
        **checks.report(check, list(now.per_query.values())), "id": check.pk, "scope": check.scope,
        "looks_per_pair": check.looks or 2, "found": found_at_decision(check) if decided else check.found_at_draw,
        "queries": rows, "claim": claim_words(check, len(rows)),
        # Each query's own interval, uncorrected for the N of them (reads like a certificate; it is not one) ...
        "queries_above_target": _above(rows, "low", check.target_recall) if intervals else None,
        # ... and the count that holds for all of them together at the claim's confidence.
        "queries_above_target_corrected": _above(rows, "low_corrected", check.target_recall) if intervals else None,
        "smallest_query": smallest(rows) if intervals else None,
        "outside_frames": "positives outside the frames: not bounded",
        "advice": advice(check, rows, now),
    }  # fmt: skip
    if withheld:  # nor how many looks were given: it would tell who has judged what the viewer judges blind
        shown["sample"], shown["decided_early"] = withheld_figures(now.size), None
        shown["queries"] = [{**row, "positives_in_sample": None, "recall": None} for row in rows]
        shown["queries_above_target"] = shown["queries_above_target_corrected"] = shown["smallest_query"] = None
        shown["advice"] = {"label_more": None, "reason": withheld}
        shown["withheld"] = withheld
    return shown


def found_at_decision(check: CompletenessCheck) -> int:
    """The frames' confirmed positives the decided claim counts found: those at the draw still relevant and those
    confirmed since outside the sample (a check decided before annotator 0026 stored both in `found`)."""
    return (check.found or 0) + (check.found_since or 0)


def smallest(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The query with the fewest confirmed positives and its recall interval: micro-recall is dominated by the
    large queries, and INQUIRE scores each query alone, so the smallest one's figure stands beside the claim."""
    if not rows:
        return None
    row = min(rows, key=lambda row: (row["found"], row["query"]))
    return {"query": row["query"], "found": row["found"], "recall": row["recall"]}


def advice(check: CompletenessCheck, rows: list[dict[str, Any]], now: CheckProgress) -> dict[str, Any]:
    """Which queries to label more: those whose sample met positives, most missing first (the sample's estimate
    of what each still hides), or whose recall interval lies under the target."""
    if check.status == CompletenessCheck.Status.CHECKING:
        return {
            "label_more": [],
            "reason": f"The check is open: {now.unjudged} of its {now.size} pairs wait for their first look and "
            f"{now.pending} for a second look or an adjudicator (ranking \u201ccompleteness check\u201d).",
        }
    missing = {
        row["query"]: row["positives_in_sample"] * row["sampled_from"] / max(1, row["sample_size"]) for row in rows
    }
    under = [row["query"] for row in rows if row["recall"] and row["recall"]["high"] < check.target_recall]
    more = sorted({q for q, m in missing.items() if m > 0} | set(under), key=lambda q: -missing.get(q, 0))
    if check.status == CompletenessCheck.Status.CERTIFIED:
        return {"label_more": [], "reason": "Certified: nothing to label for this claim."}
    named = ", ".join(map(str, more[:20])) or "none named by the sample"
    return {
        "label_more": more,
        "reason": f"Label these queries further down their rankings, then draw again: {named}. "
        "Their sampled pairs held positives the review had not confirmed.",
    }


def frame_ids(query_id: int) -> list[int] | None:
    """The image ids of `query_id`'s frame in the latest benchmark check; None where it holds no such query."""
    check = checks.latest()
    if check is None:
        return None
    stratum = check.strata.filter(query_id=query_id).first()
    return None if stratum is None else unpack(stratum.frame_ids).tolist()
