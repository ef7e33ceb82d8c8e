"""Completeness checks: draw a random sample of a query's frame, or of many queries' frames together (the
benchmark's check, annotator.completeness.benchmark), follow its labeling, decide the claim.

One model and one path for both: a check has a stratum per query (its frame, frozen at the draw, and its confirmed
positives then) and one simple random sample of the (query, image) pairs of the strata that were not confirmed
positives; a query's check is the check of one stratum. What differs is said where it differs: how the queries are
chosen, how many positives the sample is sized to tolerate (`tolerance`), and what a query's check may also ask
(a declared frame, second judgments off).

A check is drawn over the query's frame (annotator.completeness.frames: frozen at its first check, the same for every
re-check unless staff declare another). Its positives `found` are the frame's *confirmed* positives: final label
relevant with two agreeing judgments, or an adjudicator's decision. One click is not a positive: sizing the
sample on single clicks (5% of a thousand reviewed negatives) asked for a sample that could not certify even when
it met nothing (issue 51). A simple random sample is drawn from the rest of the frame: the images nobody has
judged, those judged not relevant (a positive the review missed is as missing as one nobody saw) and the
unconfirmed positives (if the sample meets one that is real, it counts against the claim).

Only looks given after the draw count (certify's doc says why): every sampled image gets one fresh look from an
annotator who had not judged it (a sampled image someone had judged joins the query's overlap sample, so that the
fresh look is blind to the old vote), and an adjudicator decides every sampled image a fresh look called relevant or
unsure, or whose looks split. A true positive of the sample is lost only when the fresh look misses it or the
adjudicator does; the test takes the team's per-look bound (annotator.completeness.looks) and the adjudicator's
allowance together (certify.pair_miss_rate) and says so. Where staff turn second judgments off, single judgments
are trusted, the judged images are settled, only the unjudged are sampled, and no adjudicator decides.

A frame's single-judgment positives are confirmed before a draw, as they are labeled (the adjudicator's queue lists
them, the default frame's before any draw; the advice says "wait" meanwhile): a draw over unconfirmed positives
sizes its sample as if each were missing, which at the first check of a team that has confirmed nothing is most of
the frame (issue 62: 19,830 of 20,660 pairs). So a draw with unconfirmed positives is refused, stating what it
costs now and after confirmation, unless the request says `with_unconfirmed`.

A query's sample is sized to certify the target whether it counts none, one, two or three positives (fewer where
three cannot; no check where even none cannot: certify.check_size), the benchmark's whether it counts none or up to
a tenth of the misses the target allows (at most 20), each tested at the share of alpha its ordinal gets
(certify.tested_at: 0.9 alpha first, the rest halving after). A query's check is drawn in two stages
(certify.staged_sizes): its first `first_stage` pairs, handed out first, certify it if they count no positive
(`clean_first_stage`); otherwise the whole sample decides. The check is decided by the write that settles its last
sampled pair (or its first stage's), or earlier by the one that makes its positives more than any certificate of
its sample allows (`decide_if_complete`, connected to annotator.labels' `judgments_settled` signal): reading a claim
never writes one.

Blind judges see nothing through a check: its candidates come in the sample's random order (a first stage's before
the rest while any of them wants a look), and whether an image waits for a look depends on how many judged it,
never on what they said.
"""

from dataclasses import dataclass
from functools import cached_property
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import IntegrityError, transaction
from django.db.models import Count, Prefetch, QuerySet
from django.utils import timezone

from annotator.completeness import certify, looks
from annotator.completeness.check_requests import ADJUDICATOR, BENCHMARK, LOOKS, QUERY, CheckRequest
from annotator.completeness.frames import BadCheck, Frame, NothingToCheckYet, frame_of, freeze, pack, unpack
from annotator.completeness.sample_progress import (
    SAMPLE_POSITIVE,
    CheckProgress,
    Progress,
    first_stage_of,
    progress,
    progress_of,
    sample_figures,
    sample_of,
    some_pair_wants_a_look,
)
from annotator.labels import sealed
from annotator.labels.sealed import Writer
from annotator.models import (
    CheckImage,
    CheckStratum,
    CompletenessCheck,
    Decision,
    Judgment,
    Label,
    LabelValue,
    OverlapImage,
    Query,
    QueryFrame,
)

CONFIRMED = looks.CONFIRMED  # a positive the claim counts as found
# A query's check is sized to certify when it counts up to this many positives: a dry-looking ranking still hides a
# few, and a check sized for none fails on the first it meets. Three (issue 62, bench/RESULTS.md "A query's check
# tolerating three"): on 200 simulated query runs the larger first sample failed less often, so the team spent
# 0.97x and 0.92x the labels of two (two had spent 0.94x and 0.99x those of one) with fewer checks, certifying as
# many claims; four spent 1.07x those of three: the first sample grows faster than the re-checks it saves. Sized to
# certify on every count up to the tolerance (certify.check_size, since), three spent 0.93x the labels of two on
# ten seeds neither choice was made on.
TOLERATE = 3
# The benchmark's check is sized to tolerate a tenth of the misses the target allows, at most MOST_TOLERATED: a
# benchmark that reached its target still hides a few positives per hundred queries (bench/RESULTS.md measured this
# sizing: evaluation.benchmark_sim, tolerate_share). Sizing it from the positives the review expects it to meet
# (certify.tolerance_for_misses) was measured too and bought nothing, even from the true count: what a re-check
# saves, the larger first sample costs.
TOLERATE_SHARE = 10
MOST_TOLERATED = 20
ROWS = 5000
tested_at = certify.tested_at


def tolerance(claim: str, found: int, target: float) -> int:
    """The positives a check's sample is sized to tolerate meeting."""
    if claim == QUERY:
        return TOLERATE
    return benchmark_tolerance(found, target)


def benchmark_tolerance(found: int, target: float, share: int = TOLERATE_SHARE) -> int:
    """The benchmark check's tolerance for `found` confirmed positives: a `share`-th of the misses the target allows,
    at most MOST_TOLERATED; none for a share of 0. The simulator measures other shares through this one rule."""
    if share <= 0:
        return 0
    return max(0, min(MOST_TOLERATED, certify.missing_at_target(found, target) // share))


@dataclass(frozen=True)
class Stratum:
    """One query's frame now: its confirmed positives, what the sample is drawn from, what waits for confirmation."""

    query: Query
    frame: Frame
    positives: npt.NDArray[np.int64]  # confirmed (second judgments on), or every final positive (off)
    population: npt.NDArray[np.int64]  # what the sample is drawn from
    unconfirmed: int  # single-judgment positives waiting for an adjudicator's confirmation


def stratum(query: Query, frame: Frame, second_judgments: bool = True) -> Stratum:
    """`query`'s stratum over `frame` (reads only). Every figure is read off images nobody judges blind (confirmed
    positives have all their judgments; a positive still waiting in an overlap sample is not counted), so it is the
    same for every viewer."""
    if second_judgments:
        positives = in_frame(frame.ids, confirmed_positives(query))
        population = np.setdiff1d(frame.ids, positives, assume_unique=True)
        return Stratum(query, frame, positives, population, len(unconfirmed_positives(query, frame.ids)))
    # Single judgments trusted: the judged images are settled.
    judged = in_frame(frame.ids, Judgment.objects.filter(query=query).values_list("image_id", flat=True))
    positives = in_frame(frame.ids, _final_ids(query, [LabelValue.RELEVANT]))
    return Stratum(query, frame, positives, np.setdiff1d(frame.ids, judged, assume_unique=True), 0)


@dataclass(frozen=True)
class Situation:
    """What drawing a check now would freeze and cost."""

    claim: str
    strata: list[Stratum]
    ordinal: int
    tested_at: float
    tolerate: int
    miss_rate: float  # the share of sampled positives the test takes its looks to lose (certify.pair_miss_rate)
    sample: int | None  # pairs the check labels; None: no sample can certify (certify.check_size)
    record: looks.LookRecord
    after_confirmation: int | None  # the sample once every unconfirmed positive is confirmed (the cheapest case)
    at_target: int  # the fewest missing positives that put recall under the target (certify.missing_at_target)
    target: float

    @property
    def found(self) -> int:
        return sum(len(s.positives) for s in self.strata)

    @cached_property
    def first_stage(self) -> int:
        """A query's check: the first pairs of its sample that certify if they count no positive (certify.staged_sizes;
        0: one stage). The benchmark's check has one stage: its frames hide a few positives per hundred queries, so
        a first stage would rarely count none."""
        if self.claim != QUERY or not self.sample:
            return 0
        staged = certify.staged_sizes(
            self.found, self.sampled_from, self.target, self.tested_at, self.miss_rate, self.tolerate
        )
        return staged[0] if staged else 0

    @property
    def all_lost(self) -> float:
        """The chance the check's looks lose every one of `at_target` sampled positives. Where it is more than the
        share of alpha the check is tested at, no sample certifies on meeting none, not even the whole frame
        (certify.check_size's None)."""
        return self.miss_rate**self.at_target

    @property
    def missing_words(self) -> str:
        """The `at_target` missing positives in words, as the API's refusal and the side pane both say them."""
        if self.at_target == 1:
            return "one missing positive already puts"
        return f"{self.at_target} missing positives already put"

    @property
    def unconfirmed(self) -> int:
        return sum(s.unconfirmed for s in self.strata)

    @property
    def sampled_from(self) -> int:
        return sum(len(s.population) for s in self.strata)

    @property
    def frame_size(self) -> int:
        return sum(len(s.frame.ids) for s in self.strata)

    def as_json(self) -> dict[str, Any]:
        shown = {
            "found": self.found, "sampled_from": self.sampled_from, "check": self.ordinal, "tested_at": self.tested_at,
            "sample": self.sample, "looks": LOOKS * (self.sample or 0), "miss_rate": self.record.bound,
            "tested_miss_rate": self.miss_rate, "per_look": self.record.as_json(), "unconfirmed": self.unconfirmed,
            "sample_after_confirmation": self.after_confirmation,
        }  # fmt: skip
        if self.claim == QUERY:
            frame = self.strata[0].frame.as_json()
            return {**shown, "frame": frame, "frame_size": self.frame_size, "looks_per_image": LOOKS,
                    "first_stage": self.first_stage}  # fmt: skip
        return {**shown, "queries": len(self.strata), "frames_size": self.frame_size, "tolerates": self.tolerate,
                "looks_per_pair": LOOKS}  # fmt: skip


def situation(query: Query | None, request: CheckRequest) -> Situation:
    """What drawing `request` now would freeze and cost (reads only): `query`'s check, or (None) the benchmark's
    over the queries the request names. BadCheck for a query with no labels, an empty frame, or no query chosen."""
    return _situation(query, request, _frames(query, request))


def _frames(query: Query | None, request: CheckRequest) -> list[tuple[Query, Frame]]:
    """The queries a check is drawn over and their frames (the rankings are read here, outside any transaction:
    seconds on a large frame)."""
    if query is None:
        return [(chosen_query, frame_of(chosen_query)) for chosen_query in chosen(request)]
    _has_labels(query)
    frame = frame_of(query, request.frame)
    if not len(frame.ids):
        raise BadCheck("The frame holds no image: choose a deeper ranking, other taxa, or the collection.")
    return [(query, frame)]


def chosen(request: CheckRequest) -> list[Query]:
    """The queries a benchmark request names; BadCheck for unknown ids or an empty choice."""
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


def _has_labels(query: Query) -> None:
    if not Judgment.objects.filter(query=query).exists():
        raise NothingToCheckYet(
            f"Query {query.pk} has no labels yet: label down its ranking first; "
            "a check tells when to stop, not where to start."
        )


def _situation(query: Query | None, request: CheckRequest, frames: list[tuple[Query, Frame]]) -> Situation:
    claim = _claim_of(query)
    strata = [stratum(chosen_query, frame, request.second_judgments) for chosen_query, frame in frames]
    ordinal = checks_of(query).count() + 1
    confidence = certify.tested_at(request.confidence, ordinal)
    found, population = sum(len(s.positives) for s in strata), sum(len(s.population) for s in strata)
    if claim == BENCHMARK and not population:
        raise BadCheck("The frames hold no image that is not a confirmed positive: nothing to check.")
    record = looks.record()
    miss_rate = certify.pair_miss_rate(record.bound, LOOKS, ADJUDICATOR if request.second_judgments else 0.0)
    tolerate = tolerance(claim, found, request.target)
    sample = certify.check_size(found, population, request.target, confidence, miss_rate, tolerate)
    waiting = sum(s.unconfirmed for s in strata)
    after = sample
    if waiting:
        more = tolerance(claim, found + waiting, request.target)
        after = certify.check_size(found + waiting, population - waiting, request.target, confidence, miss_rate, more)
    at_target = certify.missing_at_target(found, request.target)
    return Situation(
        claim, strata, ordinal, confidence, tolerate, miss_rate, sample, record, after, at_target, request.target
    )


def confirmed_positives(query: Query) -> list[int]:
    """The images of `query` whose final label is relevant and confirmed: adjudicated, or agreed by as many
    judgments as the query wants (at least two), so that none is still sealed to anyone."""
    wanted = max(2, query.judgments_wanted)
    rows = dict(
        Label.objects.filter(query=query, value=LabelValue.RELEVANT, decided_by__in=CONFIRMED).values_list(
            "image_id", "decided_by"
        )
    )
    counts = dict(
        Judgment.objects.filter(query=query, image_id__in=list(rows))
        .values("image_id")
        .annotate(n=Count("id"))
        .values_list("image_id", "n")
    )
    return [i for i, decided_by in rows.items() if decided_by == Decision.ADJUDICATED or counts.get(i, 0) >= wanted]


def unconfirmed_positives(query: Query, frame: npt.NDArray[np.int64] | None) -> npt.NDArray[np.int64]:
    """The frame's positives (`frame` None: the query's) that one judgment alone calls so, and that wait for an
    adjudicator's confirmation (annotator.labels.selectors lists them): those still waiting for a blind second
    judgment in an overlap sample are left out, so the count is the same for every viewer."""
    single = Label.objects.filter(query=query, value=LabelValue.RELEVANT, decided_by=Decision.SINGLE)
    found = single.values_list("image_id", flat=True)
    ids = np.unique(np.fromiter(found, dtype=np.int64)) if frame is None else in_frame(frame, found)
    waiting = OverlapImage.objects.filter(query=query, image_id__in=ids.tolist()).values_list("image_id", flat=True)
    return np.setdiff1d(ids, np.fromiter(waiting, dtype=np.int64))


def waiting_in_frame(query: Query) -> npt.NDArray[np.int64]:
    """unconfirmed_positives of the query's frame: the frozen one, or before any draw the default, which holds every
    image judged (frames.default_spec), so no ranking is read to know them."""
    frozen = QueryFrame.objects.filter(query=query).values_list("ids", flat=True).first()
    if frozen is not None:
        return unconfirmed_positives(query, unpack(frozen))
    return unconfirmed_positives(query, None)


def in_frame(frame: npt.NDArray[np.int64], ids: Any) -> npt.NDArray[np.int64]:
    """Those of `ids` in the (sorted) `frame`, sorted and unique."""
    found = np.fromiter(ids, dtype=np.int64)
    return np.unique(found[np.isin(found, frame)])


def _final_ids(query: Query, values: Any) -> list[int]:
    return list(Label.objects.filter(query=query, value__in=list(values)).values_list("image_id", flat=True))


def checks_of(query: Query | None = None) -> "QuerySet[CompletenessCheck]":
    """The checks of `query`, or (None) the benchmark's."""
    if query is not None:
        return CompletenessCheck.objects.filter(claim=QUERY, query=query)
    return CompletenessCheck.objects.filter(claim=BENCHMARK)


def open_check(query: Query | None = None) -> CompletenessCheck | None:
    """`query`'s open check, or (None) the benchmark's."""
    return checks_of(query).filter(status=CompletenessCheck.Status.CHECKING).first()


def latest(query: Query | None = None) -> CompletenessCheck | None:
    """`query`'s latest check, or (None) the benchmark's."""
    return checks_of(query).order_by("-ordinal").first()


def _claim_of(query: Query | None) -> str:
    return QUERY if query is not None else BENCHMARK


def latest_of(query_ids: list[int]) -> dict[int, CompletenessCheck]:
    """{query id: its latest check} for the queries that have one, in one read (the dashboard, the query list)."""
    latest: dict[int, CompletenessCheck] = {}
    # The strata with them, without their ids: the lists show each claim's frame (one read for all, not one a row).
    frames = Prefetch("strata", queryset=CheckStratum.objects.defer("frame_ids", "found_ids"))
    rows = CompletenessCheck.objects.filter(claim=QUERY, query_id__in=query_ids).prefetch_related(frames)
    for check in rows.order_by("query_id", "-ordinal"):
        if check.query_id is not None:
            latest.setdefault(check.query_id, check)
    return latest


def draw(query: Query | None, request: CheckRequest, user: Writer) -> tuple[CompletenessCheck, bool]:
    """Draw a check as `request` asks, of `query` or (None) of the benchmark's queries, or answer the open one:
    (check, drawn). Each query's frame is frozen (unless it was already), and the check keeps a stratum per query
    (its frame's ids and confirmed positives) and the sample; a sampled pair someone judged is sealed for its fresh
    look. BadCheck (nothing drawn) for a query with no labels, an empty frame, positives waiting for confirmation
    (unless the request says to draw anyway), or frames no sample can certify."""
    claim = _claim_of(query)
    if (current := open_check(query)) is not None:
        _continues(current, request)
        return current, False
    frames = _frames(query, request)  # the rankings are read outside the transaction: seconds on a large frame
    try:
        with transaction.atomic():
            if query is not None:
                # Two admins drawing at once: one check. NO KEY UPDATE, so that label writes, whose rows' foreign
                # keys take KEY SHARE on the query row, are not blocked by it while they hold rows the draw waits for.
                Query.objects.select_for_update(no_key=True).filter(pk=query.pk).get()
            if (current := open_check(query)) is not None:
                return current, False
            # The positives are read under the locks the label writes take (their final-label rows), in the
            # writers' order (labels.writes._hold), so a write that confirms or overturns one either lands before
            # the draw reads it or waits for the draw.
            ids = [chosen_query.pk for chosen_query, _ in frames]
            positives = Label.objects.select_for_update().filter(query_id__in=ids, value=LabelValue.RELEVANT)
            list(positives.order_by("query_id", "image_id").values("pk"))
            found = _situation(query, request, frames)
            _refuse_if_unready(found, request)
            check = CompletenessCheck.objects.create(
                claim=claim, query=query, ordinal=found.ordinal,
                scope=f"query {query.pk}" if query is not None else request.scope, target_recall=request.target,
                confidence=request.confidence, tested_at=found.tested_at, miss_rate=found.miss_rate,
                sampled_from=found.sampled_from, found_at_draw=found.found, second_judgments=request.second_judgments,
                drawn_by=user, looks=LOOKS, per_look_miss_rate=found.record.bound, first_stage=found.first_stage,
            )  # fmt: skip
            _keep(check, found, user)
            if not found.sample:  # the frames are all settled, or too small to hide the target: decided at once
                decide(check, progress(check))
    except IntegrityError:  # another draw committed first (the one-open-check constraints)
        current = open_check(query)
        if current is None:
            raise
        return current, False
    return check, True


def _refuse_if_unready(found: Situation, request: CheckRequest) -> None:
    where = "the frame" if found.claim == QUERY else "the frames"
    if found.unconfirmed and not request.with_unconfirmed:
        raise BadCheck(unconfirmed_words(found.unconfirmed, found.sample, found.after_confirmation, where))
    if found.sample is None:
        raise BadCheck(uncertifiable_words(found, request))


def _continues(check: CompletenessCheck, request: CheckRequest) -> None:
    """A request that meets a query's open check continues it, unless it declares another frame: BadCheck then,
    rather than answering with a check over a frame the request did not ask for."""
    declared = request.frame
    if declared is None or check.claim != QUERY:
        return
    frame = check.stratum
    top = CompletenessCheck.Frame.TOP
    if declared.kind != frame.frame_kind or (declared.kind == top and declared.depth != frame.frame_depth):
        raise BadCheck(
            f"Check {check.ordinal} of query {check.query_id} is open over its own frame ({frame.frame_kind}"
            f"{f', depth {frame.frame_depth}' if frame.frame_depth else ''}): label its sample first; a new frame is "
            "declared at the next draw."
        )


def _keep(check: CompletenessCheck, found: Situation, user: Writer) -> None:
    """The strata, and a simple random sample of the union of their populations. Fresh entropy, not a seed an
    annotator could replay: the sample must be as random to them as to the test."""
    strata = found.strata
    pairs_query = np.concatenate([np.full(len(s.population), n, dtype=np.int64) for n, s in enumerate(strata)])
    pairs_image = np.concatenate([s.population for s in strata])
    query_ids = np.asarray([s.query.pk for s in strata], dtype=np.int64)[pairs_query]
    drawn = sample_order(check, query_ids, pairs_image)[: found.sample or 0]
    for s in strata:
        freeze(s.query, s.frame, user)
    CheckStratum.objects.bulk_create(
        [
            CheckStratum(
                completeness_check=check,
                query=s.query,
                frame_kind=s.frame.spec.kind,
                frame_depth=s.frame.spec.depth,
                frame_taxa=list(s.frame.spec.taxa),
                frame_size=len(s.frame.ids),
                frame_ids=pack(s.frame.ids),
                found_ids=pack(s.positives),
                sampled_from=len(s.population),
            )  # fmt: skip
            for s in strata
        ],
        batch_size=ROWS,
    )
    rows = [
        CheckImage(
            completeness_check=check, query=strata[int(pairs_query[n])].query, image_id=int(pairs_image[n]), position=p
        )
        for p, n in enumerate(drawn)
    ]
    CheckImage.objects.bulk_create(rows, batch_size=ROWS)
    if not check.second_judgments:
        return
    by_query: dict[int, list[int]] = {}
    for row in rows:
        by_query.setdefault(row.query_id, []).append(row.image_id)
    for query_id, image_ids in by_query.items():  # a fresh look at a pair someone judged is blind to the old vote
        seal_judged(query_id, image_ids)


def sample_order(
    check: CompletenessCheck, query_ids: npt.NDArray[np.int64], image_ids: npt.NDArray[np.int64]
) -> npt.NDArray[np.int64]:
    """A random order of the (query, image) pairs a check is drawn from (their indices): the sample is its first
    pairs. Fresh entropy, never a seed. The one place a draw's randomness comes from, so that a benchmark can give
    the server the simulator's draws (bench/completeness_api.py --coupled-draws: common random numbers)."""
    return np.random.default_rng().permutation(len(image_ids))


def seal_judged(query_id: int, sample: list[int]) -> None:
    """Put the sampled images of `query_id` that someone has judged under seal, so that the fresh look each gets is
    given blind and their judgments so far count as blind votes (annotator.labels.sealed). Images nobody judged need
    no seal: their look is the first. The check's decision opens them again (`decide`)."""
    judged = Judgment.objects.filter(query_id=query_id, image_id__in=sample).values_list("image_id", flat=True)
    sealed.seal(query_id, set(judged))


def unconfirmed_words(unconfirmed: int, now: int | None, after: int | None, where: str = "the frame") -> str:
    """Why a draw waits for confirmations, with both costs (the API's refusal, the side pane, the benchmark's)."""
    plural = unconfirmed != 1
    what = f"{unconfirmed} positive{'s' if plural else ''} of {where} wait{'' if plural else 's'}"
    costs = (
        f"drawn now the check would sample {now:,} images" if now is not None else "drawn now no sample could certify"
    )
    later = f"it would sample {after:,}" if after is not None else "no sample could yet (label further)"
    return (
        f"{what} for an adjudicator's confirmation (the adjudication queue lists them): {costs}, counting each as "
        f'missing; once they are confirmed, {later}. Confirm them first, or draw anyway ("with_unconfirmed": '
        "true; in the side pane, \u201cdraw before positives are confirmed\u201d)."
    )


def uncertifiable_words(found: Situation, request: CheckRequest) -> str:
    """Why no sample can certify `request` over the frame(s) now: the draw's refusal, and the advice's reason."""
    if found.claim == BENCHMARK:
        return f"No sample can certify {request.target:.0%} over these frames: confirm more positives first."
    return (
        f"No sample can certify {request.target:.0%} over this frame at check {found.ordinal}: with "
        f"{found.found} confirmed positives, {found.missing_words} recall under the target, and the check's "
        f"looks may lose {_them(found.at_target)} even when sampled ({found.all_lost:.2%} of the time), more often "
        f"than the {1 - found.tested_at:.2%} this check may err. Confirm more positives, or declare a lower target."
    )


def _them(at_target: int) -> str:
    return {1: "it", 2: "both"}.get(at_target, f"all {at_target}")


def current(check: CompletenessCheck) -> Progress:
    """A query's check's progress as a page shows it (reads only). A decided check's figures are its stored ones."""
    if check.status != CompletenessCheck.Status.CHECKING:
        size = check.images.count()
        labeled = size if check.looked_at is None else check.looked_at
        return Progress(size, labeled, check.positives or 0, second=[], adjudication=[], unjudged=[], order=[])
    assert check.query is not None, "a query's check"
    return progress_of(check, check.query)


def report(check: CompletenessCheck, parts: list[Progress]) -> dict[str, Any]:
    """What every check's report says, a query's and the benchmark's alike (annotator.completeness.claims and
    .benchmark add what their claim says): its status and test, what it was drawn from, its sample's figures
    (`parts`: its progress, per query) and, once decided, its bound."""
    decided = check.status != CompletenessCheck.Status.CHECKING
    size = sum(part.size for part in parts)
    return {
        "status": check.status, "check": check.ordinal, "target_recall": check.target_recall,
        "confidence": check.confidence, "tested_at": check.tested_at,
        # The per-look bound the test took (a check drawn before issue 62: the pair's bound, all it had).
        "miss_rate": check.per_look_miss_rate if check.looks else check.miss_rate, "tested_miss_rate": check.miss_rate,
        "sampled_from": check.sampled_from, "sample": sample_figures(parts),
        "recall_lower_bound": check.recall_lower_bound if decided else None,
        # Decided before every pair was looked at: the sample had met more positives than a certificate allows.
        "decided_early": early_words(check, size) or None,
        "first_stage": check.first_stage,
        "decided_by_first_stage": first_stage_words(check, size) or None,
        "drawn_at": check.created_at.isoformat(),
        "decided_at": check.decided_at.isoformat() if check.decided_at else None,
    }  # fmt: skip


def decide_if_complete(query_id: int, image_ids: Any = None, **_: Any) -> None:
    """Decide the open checks that the write which just settled `image_ids` of `query_id` completed, or failed: called
    in the write's transaction (annotator.labels' `judgments_settled` signal), never on a read. A check fails as soon
    as its sample has counted more positives than a certificate allows (`failed_already`), whatever its other pairs
    would show: its team is not asked for looks that cannot change the decision."""
    pairs = CheckImage.objects.filter(query_id=query_id, completeness_check__status=CompletenessCheck.Status.CHECKING)
    if image_ids is not None:
        pairs = pairs.filter(image_id__in=list(image_ids))
    for check in CompletenessCheck.objects.filter(pk__in=pairs.values("completeness_check")).order_by("pk"):
        # One query, not a progress of every stratum, on most writes: only a write that completes the looks (of a
        # first stage where the check has one: its pairs are among the whole sample's, so while they want a look
        # the whole does too), or that may have counted a positive, can decide.
        wanting = some_pair_wants_a_look(check, below=check.first_stage or None)
        if wanting and not _now_positive(query_id, pairs.filter(completeness_check=check)):
            continue
        now = progress(check)
        if (stage := clean_first_stage(check, now)) is not None and decide(check, now, stage):
            continue
        if now.complete or failed_already(check, now):
            decide(check, now)


def clean_first_stage(check: CompletenessCheck, now: CheckProgress) -> Progress | None:
    """`check`'s first stage where it has all its looks and counted no positive (it certifies then, without the
    other pairs: certify.staged_sizes); None otherwise, and for a check in one stage."""
    if not check.first_stage or check.query is None:
        return None
    stage = first_stage_of(check, check.query, now.of(check.query.pk))
    if stage is None or not stage.complete or stage.positives:
        return None
    return stage


def _now_positive(query_id: int, pairs: "QuerySet[CheckImage]") -> bool:
    """Whether any of `pairs` (sampled pairs of `query_id`) has a final label a sample counts as a positive."""
    labels = Label.objects.filter(query_id=query_id, image_id__in=pairs.values("image_id"))
    return labels.filter(value__in=SAMPLE_POSITIVE).exists()


def failed_already(check: CompletenessCheck, now: CheckProgress) -> bool:
    """Whether `check`'s sample has counted so many positives `now` that no count from there up certifies
    (certify.can_certify, at the positives confirmed outside it so far): the check is then decided not certified
    before its other pairs are looked at (curtailed sampling: it can only turn a certificate into a failure, never
    the reverse, so the claim's level holds whatever order the looks come in)."""
    found, outside = _found(check, now)
    return not certify.can_certify(
        found, check.sampled_from, now.size, now.positives, check.target_recall, check.tested_at, check.miss_rate,
        outside,
    )  # fmt: skip


def _found(check: CompletenessCheck, now: CheckProgress) -> tuple[int, int]:
    """(the strata's confirmed positives at the draw still relevant, their positives confirmed since the draw outside
    the sample), summed over the strata (found_after)."""
    found = outside = 0
    for frame in check.strata.select_related("query"):
        order = now.of(frame.query_id).order
        kept, later = found_after(frame.query, unpack(frame.frame_ids), unpack(frame.found_ids), order)
        found += kept
        outside += min(later, frame.sampled_from - len(order))
    return found, outside


def decide(check: CompletenessCheck, now: CheckProgress, first_stage: Progress | None = None) -> bool:
    """Decide `check` on its looks `now`: its claim (certify.claim over the strata's counts together) stored, and
    the sampled pairs opened (their looks are in: revisions now go to the adjudicator). A check decided early
    (failed_already) is not certified, and its bound is read from the pairs decided then (the others bound
    nothing): `looked_at` says how many. (Its reports give no interval of what is missing: claims, benchmark.)
    With `first_stage` (clean_first_stage: all its looks in, no positive counted) the check is certified by its first
    stage (certify.staged_sizes), its bound read from those pairs; unless that bound falls short (positives found at
    the draw overturned since), when nothing is decided (False) and the whole sample decides later. True once the
    check is decided, here or by another write first."""
    if first_stage is not None:
        assert check.query_id is not None, "a query's check"
        now = CheckProgress({check.query_id: first_stage})
    found, outside = _found(check, now)
    looked = now.labeled - sum(len(p.adjudication) for p in now.per_query.values())  # the whole sample once complete
    claim = certify.claim(
        found, check.sampled_from, looked, now.positives, check.target_recall, check.tested_at, check.miss_rate,
        confirmed_outside=outside,
    )  # fmt: skip
    if first_stage is not None and not claim.certified:
        return False  # declining a first stage's certificate only lowers the staged test's level
    with transaction.atomic():
        if not CompletenessCheck.objects.select_for_update().filter(pk=check.pk, status="checking").exists():
            check.refresh_from_db()  # another write decided it first: the caller reads its decision, not a stale one
            return True
        certified = claim.certified and now.complete
        check.status = CompletenessCheck.Status.CERTIFIED if certified else CompletenessCheck.Status.NOT_CERTIFIED
        check.found, check.found_since, check.positives, check.looked_at = found, outside, now.positives, looked
        check.recall_lower_bound, check.p_value = claim.recall_lower_bound, claim.p_value
        check.missing_point, check.missing_low, check.missing_high = claim.missing
        check.decided_at = timezone.now()
        check.save()
        for query_id, image_ids in sample_of(check).items():
            sealed.open_images(query_id, image_ids)
    return True


def decided_early(check: CompletenessCheck, size: int) -> bool:
    """Whether `check` (of `size` sampled pairs) failed before all of them were looked at (curtailed)."""
    failed = check.status == CompletenessCheck.Status.NOT_CERTIFIED
    return check.looked_at is not None and check.looked_at < size and failed


def by_first_stage(check: CompletenessCheck, size: int) -> bool:
    """Whether `check` (of `size` sampled pairs) was certified by its first stage, before its other pairs."""
    return check.looked_at is not None and check.looked_at < size and check.status == CompletenessCheck.Status.CERTIFIED


def first_stage_words(check: CompletenessCheck, size: int) -> str:
    """How a check certified by its first stage was decided, in the words every report uses ("" for any other)."""
    if not by_first_stage(check, size):
        return ""
    return (
        f"certified by the first {check.looked_at:,} of its {size:,} sampled pairs: they counted no positive, and a "
        "first stage that counts none certifies at the check's confidence (drawn in two stages), so the rest were "
        "not looked at"
    )


def early_words(check: CompletenessCheck, size: int) -> str:
    """How a check decided early was decided, in the words every report uses ("" for any other check)."""
    if not decided_early(check, size):
        return ""
    met = check.positives or 0
    return (
        f"decided after {check.looked_at:,} of its {size:,} sampled pairs: they had met {met} positive"
        f"{'' if met == 1 else 's'}, more than a certificate of this sample allows, so the rest were not looked at"
    )


def found_after(
    query: Query, frame: npt.NDArray[np.int64], found_ids: npt.NDArray[np.int64], sample: list[int]
) -> tuple[int, int]:
    """At a check's decision: (a stratum's confirmed positives at the draw still relevant, the frame's positives
    confirmed since the draw outside the sample). The second are among the images the sample bounds
    (certify.claim's `confirmed_outside`): found, though not known in advance."""
    found = len(in_frame(found_ids, _final_ids(query, [LabelValue.RELEVANT])))
    later = in_frame(frame, confirmed_positives(query))
    outside = len(np.setdiff1d(np.setdiff1d(later, found_ids), np.asarray(sample, dtype=np.int64)))
    return found, outside
