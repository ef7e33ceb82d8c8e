"""The benchmark's completeness claim: one random check over the union of many queries' frames.

A per-query claim at 90% costs a sample that tolerates a tenth of the query's positives missing: for a query of
46 positives, about 5, so a check sees most of a small frame. Over a benchmark the misses a claim tolerates grow
with the whole benchmark, so one pooled check is cheap per query. Staff choose the queries (all, a split, or a
list); each query's frame is its frozen frame (annotator.completeness.frames), and a simple random sample is drawn
from the union of the (query, image) pairs that are not confirmed positives. Each sampled pair gets one
fresh look, blind, and is adjudicated where the look says relevant, through the query's normal "completeness check"
ranking (annotator.completeness.sampled), exactly as a query's own check. The claim (certify.claim over the pooled
counts) is

    micro-recall >= T with confidence 1 - alpha over these N queries' frames,

micro-recall being every positive found in the frames over every positive in them; positives outside the frames
are not bounded. Per query the same sample, restricted to its pairs, is a simple random sample of them given its
size, so it gives an interval of that query's recall (certify.recall_interval): reported, never certified.
Benchmark checks spend alpha as a query's checks do (certify.tested_at, by their ordinal). No peer or paper we
found offers a benchmark-level completeness certificate; the statistics are Callaghan and Müller-Hansen's test
(annotator.completeness.certify) applied to the pooled frame.
"""

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import IntegrityError, transaction
from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from annotator.completeness import certify, looks
from annotator.completeness.check_requests import ADJUDICATOR, LOOKS, read_flag, read_share
from annotator.completeness.checks import (
    Progress,
    confirmed_positives,
    found_after,
    fresh_since,
    in_frame,
    looks_at,
    sample_figures,
    seal_judged,
    unconfirmed_positives,
    unconfirmed_words,
    withheld_figures,
)
from annotator.completeness.frames import BadCheck, Frame, frame_of, freeze
from annotator.labels import sealed
from annotator.labels.sealed import Writer
from annotator.models import (
    BenchmarkCheck,
    BenchmarkImage,
    BenchmarkQuery,
    Judgment,
    Label,
    LabelValue,
    Query,
    pack_ids,
    unpack_ids,
)

MAX_QUERIES = 2000
# The benchmark sample is sized to tolerate a tenth of the misses the target allows, at most MOST_TOLERATED: a check
# sized to certify on none fails on the first it meets, and a benchmark that reached its target still hides a few
# positives per hundred queries (bench/RESULTS.md measured this sizing: evaluation.benchmark_sim, tolerate_share).
# Sizing it from the positives the review expects it to meet (certify.tolerance_for_misses) was measured too and
# bought nothing, even from the true count: what a re-check saves, the larger first sample costs.
TOLERATE_SHARE = 10
MOST_TOLERATED = 20
ROWS = 5000


@dataclass(frozen=True)
class BenchmarkRequest:
    target: float
    confidence: float
    query_ids: tuple[int, ...] | None  # None: every query
    split: str | None
    with_unconfirmed: bool = False  # draw although frame positives wait for confirmation (they are sampled then)
    dry_run: bool = False  # answer what the draw would cost, and draw nothing

    @property
    def scope(self) -> str:
        if self.query_ids is not None:
            return "queries " + ", ".join(map(str, self.query_ids))
        return f"the {self.split} split" if self.split else "every query"


def read_request(data: Any) -> BenchmarkRequest:
    """{"target_recall": 0.9, "confidence": 0.95, "queries": [ids] | "split": "val"}; BadCheck saying what to fix."""
    if not isinstance(data, dict):
        raise BadCheck('Send a JSON object such as {"target_recall": 0.9, "confidence": 0.95, "split": "val"}.')
    queries, split = data.get("queries"), data.get("split")
    if queries is not None and split is not None:
        raise BadCheck('Name the queries by "queries" or by "split", not both.')
    ids = None if queries is None else _read_query_ids(queries)
    split = None if split is None else _read_split(split)
    dry_run = read_flag(data, "dry_run", False)
    return BenchmarkRequest(
        target=read_share(data, "target_recall", 0.9), confidence=read_share(data, "confidence", 0.95),
        query_ids=ids, split=split, with_unconfirmed=read_flag(data, "with_unconfirmed", False), dry_run=dry_run,
    )  # fmt: skip


def _read_query_ids(queries: Any) -> tuple[int, ...]:
    if not isinstance(queries, list) or not queries or len(queries) > MAX_QUERIES:
        raise BadCheck(f'"queries" must be a list of 1 to {MAX_QUERIES:,} query ids.')
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 < i < 2**63 for i in queries):
        raise BadCheck('Each of "queries" must be a query id, a whole number such as 12.')
    return tuple(sorted(set(queries)))


def _read_split(split: Any) -> str:
    splits = tuple(Query.Split.values)
    if split not in splits:
        raise BadCheck(f'"split" must be one of {", ".join(splits)}, not {split!r:.40}.')
    return str(split)


def chosen(request: BenchmarkRequest) -> list[Query]:
    """The queries a request names; BadCheck for unknown ids or an empty choice."""
    queries = Query.objects.order_by("pk")
    if request.query_ids is not None:
        found = list(queries.filter(pk__in=request.query_ids))
        unknown = sorted(set(request.query_ids) - {query.pk for query in found})
        if unknown:
            raise BadCheck(f"No query has the id {', '.join(map(str, unknown[:10]))}: check the list.")
        return found
    if request.split:
        queries = queries.filter(split=request.split)
    found = list(queries)
    if not found:
        raise BadCheck(f"No query is in {request.scope}: import or choose queries first.")
    return found


@dataclass(frozen=True)
class Stratum:
    query: Query
    frame: Frame
    positives: npt.NDArray[np.int64]
    population: npt.NDArray[np.int64]
    unconfirmed: int


@dataclass(frozen=True)
class Situation:
    strata: list[Stratum]
    ordinal: int
    tested_at: float
    tolerate: int
    sample: int | None
    miss_rate: float  # the share of sampled positives the test takes its looks to lose (certify.pair_miss_rate)
    record: looks.LookRecord
    after_confirmation: int | None  # the sample once every unconfirmed positive is confirmed

    @property
    def found(self) -> int:
        return sum(len(stratum.positives) for stratum in self.strata)

    @property
    def unconfirmed(self) -> int:
        return sum(stratum.unconfirmed for stratum in self.strata)

    @property
    def sampled_from(self) -> int:
        return sum(len(stratum.population) for stratum in self.strata)

    def as_json(self) -> dict[str, Any]:
        return {
            "queries": len(self.strata), "frames_size": sum(len(s.frame.ids) for s in self.strata),
            "found": self.found, "sampled_from": self.sampled_from, "check": self.ordinal,
            "tested_at": self.tested_at, "sample": self.sample, "tolerates": self.tolerate,
            "looks_per_pair": LOOKS, "looks": LOOKS * (self.sample or 0), "miss_rate": self.record.bound,
            "tested_miss_rate": self.miss_rate, "per_look": self.record.as_json(), "unconfirmed": self.unconfirmed,
            "sample_after_confirmation": self.after_confirmation,
        }  # fmt: skip


def situation(request: BenchmarkRequest) -> Situation:
    """What drawing `request` now would freeze and cost (reads only)."""
    return _situation(request, [(query, frame_of(query)) for query in chosen(request)])


def _situation(request: BenchmarkRequest, frames: list[tuple[Query, Frame]]) -> Situation:
    strata = []
    for query, frame in frames:
        positives = in_frame(frame.ids, confirmed_positives(query))
        rest = np.setdiff1d(frame.ids, positives, assume_unique=True)
        strata.append(Stratum(query, frame, positives, rest, len(unconfirmed_positives(query, frame.ids))))
    ordinal = BenchmarkCheck.objects.count() + 1
    confidence = certify.tested_at(request.confidence, ordinal)
    found, population = sum(len(s.positives) for s in strata), sum(len(s.population) for s in strata)
    if not population:
        raise BadCheck("The frames hold no image that is not a confirmed positive: nothing to check.")
    record = looks.record()
    miss_rate = certify.pair_miss_rate(record.bound, LOOKS, ADJUDICATOR)
    sample = _size(found, population, request, confidence, miss_rate)
    waiting = sum(s.unconfirmed for s in strata)
    after = _size(found + waiting, population - waiting, request, confidence, miss_rate) if waiting else sample
    tolerate = _tolerated(found, request.target)
    return Situation(strata, ordinal, confidence, tolerate, sample, miss_rate, record, after)


def _tolerated(found: int, target: float) -> int:
    return max(0, min(MOST_TOLERATED, certify.missing_at_target(found, target) // TOLERATE_SHARE))


def _size(found: int, population: int, request: BenchmarkRequest, confidence: float, miss_rate: float) -> int | None:
    tolerate = _tolerated(found, request.target)
    return certify.check_size(found, population, request.target, confidence, miss_rate, tolerate)


def open_check() -> BenchmarkCheck | None:
    return BenchmarkCheck.objects.filter(status=BenchmarkCheck.Status.CHECKING).first()


def latest() -> BenchmarkCheck | None:
    return BenchmarkCheck.objects.order_by("-ordinal").first()


def certified_over(query: Query) -> bool:
    """Whether the latest benchmark check certified its claim over a frame of `query`."""
    check = latest()
    return bool(check and check.status == BenchmarkCheck.Status.CERTIFIED and check.strata.filter(query=query).exists())


def open_words(check: BenchmarkCheck, asked: BenchmarkRequest) -> str:
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


def draw(request: BenchmarkRequest, user: Writer) -> tuple[BenchmarkCheck, bool]:
    """Draw a benchmark check as `request` asks, or answer the open one: (check, drawn). Each query's frame is
    frozen (where it was not), and the strata, their confirmed positives and the sample are kept in the check;
    every sampled pair joins its query's overlap sample for its second look. BadCheck: nothing drawn."""
    if (current := open_check()) is not None:
        return current, False
    frames = [(query, frame_of(query)) for query in chosen(request)]  # the rankings: outside the transaction
    try:
        with transaction.atomic():
            if (current := open_check()) is not None:
                return current, False
            # The positives are read under the locks the label writes take (their final-label rows).
            ids = [query.pk for query, _ in frames]
            positives = Label.objects.select_for_update().filter(query_id__in=ids, value=LabelValue.RELEVANT)
            list(positives.order_by("query_id", "image_id").values("pk"))  # in the writers' order
            found = _situation(request, frames)
            if found.unconfirmed and not request.with_unconfirmed:
                raise BadCheck(
                    unconfirmed_words(found.unconfirmed, found.sample, found.after_confirmation, "the frames")
                )
            if found.sample is None:
                raise BadCheck(
                    f"No sample can certify {request.target:.0%} over these frames: confirm more positives first."
                )
            check = BenchmarkCheck.objects.create(
                ordinal=found.ordinal, scope=request.scope, target_recall=request.target,
                confidence=request.confidence, tested_at=found.tested_at, miss_rate=found.miss_rate,
                sampled_from=found.sampled_from, found_at_draw=found.found, drawn_by=user,
                looks=LOOKS, per_look_miss_rate=found.record.bound,
            )  # fmt: skip
            _keep(check, found, user)
            if not found.sample:
                decide(check, progress(check))
    except IntegrityError:  # another draw committed first (the one-open-check constraint)
        current = open_check()
        if current is None:
            raise
        return current, False
    return check, True


def _keep(check: BenchmarkCheck, found: Situation, user: Writer) -> None:
    """The strata, and a simple random sample of the union of their populations (fresh entropy, as a query's check)."""
    pairs_query = np.concatenate([np.full(len(s.population), i, dtype=np.int64) for i, s in enumerate(found.strata)])
    pairs_image = np.concatenate([s.population for s in found.strata])
    chosen_pairs = np.random.default_rng().permutation(len(pairs_image))[: found.sample]
    for stratum in found.strata:
        freeze(stratum.query, stratum.frame, user)
    BenchmarkQuery.objects.bulk_create(
        [
            BenchmarkQuery(
                benchmark=check,
                query=s.query,
                frame_kind=s.frame.spec.kind,
                frame_depth=s.frame.spec.depth,
                frame_size=len(s.frame.ids),
                frame_ids=pack_ids(s.frame.ids),
                found_ids=pack_ids(s.positives),
                sampled_from=len(s.population),
            )  # fmt: skip
            for s in found.strata
        ],
        batch_size=ROWS,
    )
    rows = [
        BenchmarkImage(
            benchmark=check, query=found.strata[int(pairs_query[n])].query, image_id=int(pairs_image[n]), position=p
        )
        for p, n in enumerate(chosen_pairs)
    ]
    BenchmarkImage.objects.bulk_create(rows, batch_size=ROWS)
    by_query: dict[int, list[int]] = defaultdict(list)
    for row in rows:
        by_query[row.query_id].append(row.image_id)
    for query_id, image_ids in by_query.items():  # a fresh look at a pair someone judged is blind to the old vote
        seal_judged(query_id, image_ids)


def _sample_of(check: BenchmarkCheck) -> dict[int, list[int]]:
    """{query id: its sampled images in the sample's order}."""
    by_query: dict[int, list[int]] = defaultdict(list)
    for query_id, image_id in check.images.order_by("position").values_list("query_id", "image_id"):
        by_query[query_id].append(image_id)
    return dict(by_query)


@dataclass
class BenchmarkProgress:
    per_query: dict[int, Progress] = field(default_factory=dict)

    @property
    def size(self) -> int:
        return sum(p.size for p in self.per_query.values())

    @property
    def labeled(self) -> int:
        return sum(p.labeled for p in self.per_query.values())

    @property
    def positives(self) -> int:
        return sum(p.positives for p in self.per_query.values())

    @property
    def pending(self) -> int:
        return sum(p.pending for p in self.per_query.values())

    @property
    def unjudged(self) -> int:
        return sum(len(p.unjudged) for p in self.per_query.values())

    @property
    def complete(self) -> bool:
        return all(p.complete for p in self.per_query.values())


def progress(check: BenchmarkCheck) -> BenchmarkProgress:
    """How far the check's labeling has come, per query (reads only)."""
    sample = _sample_of(check)
    queries = {query.pk: query for query in Query.objects.filter(pk__in=list(sample))}
    since = fresh_since(check)
    return BenchmarkProgress(
        {query_id: looks_at(queries[query_id], ids, since=since, looks=check.looks) for query_id, ids in sample.items()}
    )


@dataclass(frozen=True)
class Wanting:
    order: list[int]
    wanting: set[int]


def wanting(query: Query) -> Wanting:
    """The open benchmark check's images of `query`, in the sample's order, and those still wanting a look."""
    now = query_progress(query)
    if now is None:
        return Wanting([], set())
    return Wanting(now.order, set(now.second) | set(now.unjudged))


def query_progress(query: Query) -> Progress | None:
    """The open benchmark check's pairs of `query` and their looks (reads only); None where it holds none."""
    check = open_check()
    if check is None:
        return None
    ids = list(check.images.filter(query=query).order_by("position").values_list("image_id", flat=True))
    return looks_at(query, ids, since=fresh_since(check), looks=check.looks) if ids else None


def decide_if_complete(query_id: int, image_ids: Any = None) -> None:
    """Decide the open benchmark check if the write that settled `image_ids` of `query_id` completed it."""
    pairs = BenchmarkImage.objects.filter(query_id=query_id, benchmark__status=BenchmarkCheck.Status.CHECKING)
    if image_ids is not None:
        pairs = pairs.filter(image_id__in=list(image_ids))
    first = pairs.select_related("benchmark").first()
    if first is None:
        return
    if _some_pair_wants_a_look(first.benchmark):  # one query, not a progress of every stratum, on most writes
        return
    now = progress(first.benchmark)
    if now.complete:
        decide(first.benchmark, now)


def _some_pair_wants_a_look(check: BenchmarkCheck) -> bool:
    """Whether a sampled pair has fewer looks than the check wants (the decision waits for it), in one query."""
    given = Judgment.objects.filter(query=OuterRef("query"), image=OuterRef("image"))
    if check.looks:
        given = given.filter(created_at__gte=check.created_at)
    counted = given.order_by().values("query").annotate(n=Count("id")).values("n")
    pairs = check.images.annotate(looks=Coalesce(Subquery(counted), 0))
    return pairs.filter(looks__lt=check.looks or 2).exists()


def decide(check: BenchmarkCheck, now: BenchmarkProgress) -> None:
    found = outside = 0
    for stratum in check.strata.select_related("query"):
        sample = now.per_query.get(stratum.query_id)
        order = sample.order if sample else []
        kept, later = found_after(stratum.query, unpack_ids(stratum.frame_ids), unpack_ids(stratum.found_ids), order)
        found += kept
        outside += min(later, stratum.sampled_from - len(order))
    claim = certify.claim(
        found, check.sampled_from, now.size, now.positives, check.target_recall, check.tested_at, check.miss_rate,
        confirmed_outside=outside,
    )  # fmt: skip
    with transaction.atomic():
        if not BenchmarkCheck.objects.select_for_update().filter(pk=check.pk, status="checking").exists():
            check.refresh_from_db()  # another write decided it first: the caller reads its decision, not a stale one
            return
        check.status = BenchmarkCheck.Status.CERTIFIED if claim.certified else BenchmarkCheck.Status.NOT_CERTIFIED
        check.found, check.positives = found + outside, now.positives
        check.recall_lower_bound, check.p_value = claim.recall_lower_bound, claim.p_value
        check.decided_at = timezone.now()
        check.save()
        for query_id, sample in now.per_query.items():  # its looks are in: revisions now go to the adjudicator
            sealed.open_images(query_id, sample.order)


def claim_words(check: BenchmarkCheck, queries: int) -> str:
    """The one sentence the benchmark claim is said in, everywhere (API, dashboard, release card, croissant.json)."""
    percent, sure = f"{check.target_recall:.0%}", f"{check.confidence:.0%}"
    scope = (
        f"over the frames of {queries} queries ({check.scope}; benchmark check {check.ordinal}, tested at "
        f"{check.tested_at:.2%}, {looks.assumption_words(check.looks, check.per_look_miss_rate, check.miss_rate)}); "
        "positives outside the frames: not bounded"
    )
    if check.status == BenchmarkCheck.Status.CERTIFIED:
        return f"Micro-recall is at least {percent} with {sure} confidence {scope}."
    if check.status == BenchmarkCheck.Status.NOT_CERTIFIED:
        return f"Not certified: micro-recall at least {percent} with {sure} confidence could not be claimed {scope}."
    return f"Checking whether micro-recall is at least {percent} with {sure} confidence {scope}."


def _query_row(
    check: BenchmarkCheck, stratum: BenchmarkQuery, sample: Progress | None, decided: bool, together: float
) -> dict[str, Any]:
    """One query's row of the report: its frame, what was found, its share of the sample, and (once the check is
    decided: an interval needs the whole sample looked at) its recall interval, also at `together`."""
    size = sample.size if sample else 0
    met = sample.positives if sample else 0
    found = len(unpack_ids(stratum.found_ids))
    recall = None
    if decided:
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


def report(check: BenchmarkCheck, *, withheld: str = "") -> dict[str, Any]:
    """The benchmark claim as the API, the dashboard and the releases give it. `withheld`: why the viewer may not
    read the sample's positives (they judge some of its pairs blind); those figures are then None."""
    now = progress(check)
    decided = check.status != BenchmarkCheck.Status.CHECKING
    strata = list(check.strata.select_related("query").order_by("query_id"))
    # Bonferroni over the queries: each one-sided lower bound at alpha / N, so that every query counted above the
    # target is so with the claim's confidence together (the two-sided interval at 1 - 2 alpha / N has that low end).
    together = 1 - 2 * (1 - check.confidence) / max(1, len(strata))
    rows = [_query_row(check, stratum, now.per_query.get(stratum.query_id), decided, together) for stratum in strata]
    shown: dict[str, Any] = {
        "id": check.pk, "check": check.ordinal, "status": check.status, "scope": check.scope,
        "target_recall": check.target_recall, "confidence": check.confidence, "tested_at": check.tested_at,
        "miss_rate": check.per_look_miss_rate if check.looks else check.miss_rate,
        "tested_miss_rate": check.miss_rate, "looks_per_pair": check.looks or 2,
        "recall_lower_bound": check.recall_lower_bound if decided else None,
        "found": check.found if decided else check.found_at_draw, "sampled_from": check.sampled_from,
        "sample": sample_figures(now.per_query.values()),
        "queries": rows, "claim": claim_words(check, len(rows)),
        # Each query's own interval, uncorrected for the N of them (reads like a certificate; it is not one) ...
        "queries_above_target": _above(rows, "low", check.target_recall) if decided else None,
        # ... and the count that holds for all of them together at the claim's confidence.
        "queries_above_target_corrected": _above(rows, "low_corrected", check.target_recall) if decided else None,
        "smallest_query": smallest(rows) if decided else None,
        "outside_frames": "positives outside the frames: not bounded",
        "drawn_at": check.created_at.isoformat(),
        "decided_at": check.decided_at.isoformat() if check.decided_at else None,
        "advice": advice(check, rows, now),
    }  # fmt: skip
    if withheld:  # nor how many looks were given: it would tell who has judged what the viewer judges blind
        shown["sample"] = withheld_figures(now.size)
        shown["queries"] = [{**row, "positives_in_sample": None, "recall": None} for row in rows]
        shown["queries_above_target"] = shown["queries_above_target_corrected"] = shown["smallest_query"] = None
        shown["advice"] = {"label_more": None, "reason": withheld}
        shown["withheld"] = withheld
    return shown


def smallest(rows: list[dict[str, Any]]) -> dict[str, Any] | None:
    """The query with the fewest confirmed positives and its recall interval: micro-recall is dominated by the
    large queries, and INQUIRE scores each query alone, so the smallest one's figure stands beside the claim."""
    if not rows:
        return None
    row = min(rows, key=lambda row: (row["found"], row["query"]))
    return {"query": row["query"], "found": row["found"], "recall": row["recall"]}


def advice(check: BenchmarkCheck, rows: list[dict[str, Any]], now: BenchmarkProgress) -> dict[str, Any]:
    """Which queries to label more: those whose sample met positives, most missing first (the sample's estimate
    of what each still hides), or whose recall interval lies under the target."""
    if check.status == BenchmarkCheck.Status.CHECKING:
        return {
            "label_more": [],
            "reason": f"The check is open: {now.unjudged} of its {now.size} pairs wait for their first look and "
            f"{now.pending} for a second look or an adjudicator (ranking \u201ccompleteness check\u201d).",
        }
    missing = {
        row["query"]: row["positives_in_sample"] * row["sampled_from"] / max(1, row["sample_size"]) for row in rows
    }
    under = [row["query"] for row in rows if row["recall"]["high"] < check.target_recall]
    more = sorted({q for q, m in missing.items() if m > 0} | set(under), key=lambda q: -missing.get(q, 0))
    if check.status == BenchmarkCheck.Status.CERTIFIED:
        return {"label_more": [], "reason": "Certified: nothing to label for this claim."}
    named = ", ".join(map(str, more[:20])) or "none named by the sample"
    return {
        "label_more": more,
        "reason": f"Label these queries further down their rankings, then draw again: {named}. "
        "Their sampled pairs held positives the review had not confirmed.",
    }


def frame_ids(query_id: int) -> list[int] | None:
    """The image ids of `query_id`'s frame in the latest benchmark check; None where it holds no such query."""
    check = latest()
    if check is None:
        return None
    stratum = check.strata.filter(query_id=query_id).first()
    return None if stratum is None else unpack_ids(stratum.frame_ids).tolist()
