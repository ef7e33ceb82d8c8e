"""Completeness checks: draw a random sample of a query's frame, follow its labeling, state the claim.

A check is drawn over the query's frame (annotator.progress.frames: frozen at its first check, the same for every
re-check unless staff declare another). Its positives `found` are the frame's *confirmed* positives: final label
relevant with two agreeing judgments, or an adjudicator's decision. One click is not a positive: sizing the
sample on single clicks (5% of a thousand reviewed negatives) asked for a sample that could not certify even when
it met nothing (issue 51). A simple random sample is drawn from the rest of the frame: the images nobody has
judged, those judged not relevant (a positive the review missed is as missing as one nobody saw) and the
unconfirmed positives (if the sample meets one that is real, it counts against the claim).

Every sampled image gets two blind looks (it joins the query's overlap sample at the draw), and an adjudicator
decides every sampled image that a look called relevant or unsure: two annotators who agree by mistake (0.25% of
images at 5% mistakes each) neither fail a check nor pass into the next one's `found`. A true positive of the
sample is lost only when both looks miss it or the adjudicator does; the test (annotator.progress.certify) assumes
that happens to at most `miss_rate` of them and says so. Where staff turn second judgments off, single judgments
are trusted, the judged images are settled, only the unjudged are sampled, and the test assumes one look's
mistakes (ONE_LOOK_MISS_RATE).

The sample is sized to certify the target when it counts at most one positive (or none, where one cannot), tested
at the share of alpha its ordinal gets (certify.tested_at: 0.9 alpha first, the rest halving after). The check is
decided by the write that settles its last sampled image (annotator.progress.sampled.decide_if_complete, connected
to annotator.labels' `judgments_settled` signal): reading a claim never writes one.

Blind judges see nothing through a check: its candidates come in the sample's random order, and whether an image
waits for a look depends on how many judged it, never on what they said.
"""

from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from annotator.labels.sealed import Writer
from annotator.models import (
    UNDECIDED,
    CheckImage,
    CompletenessCheck,
    Decision,
    Judgment,
    Label,
    LabelValue,
    OverlapImage,
    Query,
)
from annotator.progress import certify
from annotator.progress.check_requests import ONE_LOOK_MISS_RATE, CheckRequest
from annotator.progress.frames import BadCheck, Frame, NothingToCheckYet, frame_of, freeze, pack, unpack

# The values that count as a positive in the sample: unsure counts, so that doubt never helps a claim.
SAMPLE_POSITIVE = (LabelValue.RELEVANT, LabelValue.UNSURE)
# A positive the claim counts as found: two judgments agree on it, or an adjudicator decided it.
CONFIRMED = (Decision.AGREED, Decision.MAJORITY, Decision.ADJUDICATED)
# The sample is sized to certify when it counts this many positives: a dry-looking ranking still hides a few, and a
# check sized for none fails on the first it meets.
TOLERATE = 1
tested_at = certify.tested_at


@dataclass(frozen=True)
class Situation:
    """A query's frame now: what it is, its confirmed positives, what the sample is drawn from, and what the next
    check would cost."""

    frame: Frame
    positives: npt.NDArray[np.int64]  # confirmed (second judgments on), or every final positive (off)
    population: npt.NDArray[np.int64]  # what the sample is drawn from
    ordinal: int
    tested_at: float
    miss_rate: float
    sample: int | None  # images the check labels; None: no sample can certify (certify.check_size)
    unconfirmed: int  # the frame's single-judgment positives waiting for an adjudicator's confirmation

    @property
    def found(self) -> int:
        return len(self.positives)

    def as_json(self) -> dict[str, Any]:
        return {
            "frame": self.frame.as_json(), "frame_size": len(self.frame.ids), "found": self.found,
            "sampled_from": len(self.population), "check": self.ordinal, "tested_at": self.tested_at,
            "miss_rate": self.miss_rate, "sample": self.sample, "unconfirmed": self.unconfirmed,
            "looks": 2 * (self.sample or 0),
        }  # fmt: skip


def situation(query: Query, request: CheckRequest) -> Situation:
    """What drawing `request` now would freeze and cost (reads only); BadCheck for a query with no labels or an
    empty frame. Every figure is read off images nobody judges blind (confirmed positives have all their
    judgments; a positive still waiting in an overlap sample is not counted), so it is the same for every viewer."""
    _has_labels(query)
    return _situation(query, request, frame_of(query, request.frame))


def _has_labels(query: Query) -> None:
    if not Judgment.objects.filter(query=query).exists():
        raise NothingToCheckYet(
            f"Query {query.pk} has no labels yet: label down its ranking first; "
            "a check tells when to stop, not where to start."
        )


def _situation(query: Query, request: CheckRequest, frame: Frame) -> Situation:
    if not len(frame.ids):
        raise BadCheck("The frame holds no image: choose a deeper ranking, other taxa, or the collection.")
    if request.second_judgments:
        positives = in_frame(frame.ids, confirmed_positives(query))
        population = np.setdiff1d(frame.ids, positives, assume_unique=True)
        unconfirmed = len(unconfirmed_positives(query, frame.ids))
    else:  # single judgments trusted: the judged images are settled
        judged = in_frame(frame.ids, Judgment.objects.filter(query=query).values_list("image_id", flat=True))
        positives = in_frame(frame.ids, _final_ids(query, [LabelValue.RELEVANT]))
        population, unconfirmed = np.setdiff1d(frame.ids, judged, assume_unique=True), 0
    ordinal = query.completeness_checks.count() + 1
    confidence = certify.tested_at(request.confidence, ordinal)
    miss_rate = request.miss_rate if request.second_judgments else max(request.miss_rate, ONE_LOOK_MISS_RATE)
    sample = certify.check_size(
        len(positives), len(population), request.target, confidence, miss_rate, tolerate=TOLERATE
    )  # fmt: skip
    return Situation(frame, positives, population, ordinal, confidence, miss_rate, sample, unconfirmed)


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


def unconfirmed_positives(query: Query, frame: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """The frame's positives that one judgment alone calls so, and that wait for an adjudicator's confirmation
    (annotator.labels.selectors lists them): those still waiting for a blind second judgment in an overlap sample
    are left out, so the count is the same for every viewer."""
    single = Label.objects.filter(query=query, value=LabelValue.RELEVANT, decided_by=Decision.SINGLE)
    ids = in_frame(frame, single.values_list("image_id", flat=True))
    waiting = OverlapImage.objects.filter(query=query, image_id__in=ids.tolist()).values_list("image_id", flat=True)
    return np.setdiff1d(ids, np.fromiter(waiting, dtype=np.int64))


def in_frame(frame: npt.NDArray[np.int64], ids: Any) -> npt.NDArray[np.int64]:
    """Those of `ids` in the (sorted) `frame`, sorted and unique."""
    found = np.fromiter(ids, dtype=np.int64)
    return np.unique(found[np.isin(found, frame)])


def _final_ids(query: Query, values: Any) -> list[int]:
    return list(Label.objects.filter(query=query, value__in=list(values)).values_list("image_id", flat=True))


def open_check(query: Query) -> CompletenessCheck | None:
    return query.completeness_checks.filter(status=CompletenessCheck.Status.CHECKING).first()


def latest(query: Query) -> CompletenessCheck | None:
    return query.completeness_checks.order_by("-ordinal").first()


def latest_of(query_ids: list[int]) -> dict[int, CompletenessCheck]:
    """{query id: its latest check} for the queries that have one, in one read (the dashboard, the query list)."""
    latest: dict[int, CompletenessCheck] = {}
    rows = CompletenessCheck.objects.filter(query_id__in=query_ids).defer("frame_ids", "found_ids")
    for check in rows.order_by("query_id", "-ordinal"):
        latest.setdefault(check.query_id, check)
    return latest


def draw(query: Query, request: CheckRequest, user: Writer) -> tuple[CompletenessCheck, bool]:
    """Draw a check of `query` as `request` asks, or answer its open one: (check, drawn). The frame is frozen for
    the query (unless it was already), and the check keeps its ids, its confirmed positives and the sample; every
    sampled image joins the overlap sample for its second look. BadCheck (nothing drawn) for a query with no
    labels, an empty frame, or one that no sample can certify."""
    if (current := open_check(query)) is not None:
        return current, False
    _has_labels(query)
    frame = frame_of(query, request.frame)  # the rankings are read outside the transaction: seconds on a large frame
    try:
        with transaction.atomic():
            # Two admins drawing at once: one check. NO KEY UPDATE, so that label writes, whose rows' foreign keys
            # take KEY SHARE on the query row, are not blocked by it while they hold rows the draw waits for.
            Query.objects.select_for_update(no_key=True).filter(pk=query.pk).get()
            if (current := open_check(query)) is not None:
                return current, False
            # The positives are read under the locks the label writes take (their final-label rows), so a write
            # that confirms or overturns one either lands before the draw reads it or waits for the draw.
            positives = Label.objects.select_for_update().filter(query=query, value=LabelValue.RELEVANT)
            list(positives.order_by("image_id").values("pk"))  # in the writers' order (labels.writes._hold)
            found = _situation(query, request, frame)
            if found.sample is None:
                raise BadCheck(_uncertifiable(found, request))
            # Fresh entropy, not a seed an annotator could replay: the sample must be as random to them as to the test.
            sample = np.random.default_rng().permutation(found.population)[: found.sample]
            freeze(query, frame, user)
            check = CompletenessCheck.objects.create(
                query=query, ordinal=found.ordinal, frame_kind=frame.spec.kind, frame_depth=frame.spec.depth,
                frame_taxa=list(frame.spec.taxa), frame_size=len(frame.ids), frame_ids=pack(frame.ids),
                found_ids=pack(found.positives), sampled_from=len(found.population), found_at_draw=found.found,
                target_recall=request.target, confidence=request.confidence, tested_at=found.tested_at,
                miss_rate=found.miss_rate, second_judgments=request.second_judgments, drawn_by=user,
            )  # fmt: skip
            CheckImage.objects.bulk_create(
                CheckImage(completeness_check=check, image_id=int(image_id), position=n)
                for n, image_id in enumerate(sample)
            )
            if request.second_judgments:  # every sampled image gets its second look, whatever the first said
                OverlapImage.objects.bulk_create(
                    [OverlapImage(query=query, image_id=int(i)) for i in sample], ignore_conflicts=True
                )
            if not len(sample):  # the frame is all settled, or too small to hide the target: decided at once
                decide(check, progress(check))
    except IntegrityError:  # another draw committed first (the one-open-check constraint)
        current = open_check(query)
        if current is None:
            raise
        return current, False
    return check, True


def _uncertifiable(found: Situation, request: CheckRequest) -> str:
    return (
        f"No sample can certify {request.target:.0%} over this frame at check {found.ordinal}: with "
        f"{found.found} confirmed positives, one missing positive already puts recall under the target, and the "
        f"check's looks may lose a sampled one ({found.miss_rate:.1%} of the time), more often than the "
        f"{1 - found.tested_at:.2%} this check may err. Confirm more positives, or declare a lower target."
    )


@dataclass(frozen=True)
class Progress:
    size: int
    labeled: int  # sampled images with all their looks
    positives: int  # sampled images an adjudicator called relevant or unsure (with second looks off: final label)
    second: list[int]  # sampled images waiting for another blind look
    adjudication: list[int]  # sampled images waiting for an adjudicator: split looks, or a positive to confirm
    unjudged: list[int]  # sampled images nobody has judged, in the sample's order
    order: list[int]  # the sample, in its random order

    @property
    def pending(self) -> int:
        return len(self.second) + len(self.adjudication)

    @property
    def complete(self) -> bool:
        return not self.unjudged and not self.pending


def progress(check: CompletenessCheck) -> Progress:
    """How far `check`'s labeling has come, read from the judgments and final labels now (reads only)."""
    sample = list(check.images.order_by("position").values_list("image_id", flat=True))
    return looks_at(check.query, sample, check.second_judgments)


def looks_at(query: Query, sample: list[int], second_judgments: bool = True) -> Progress:
    """The looks a check's `sample` of `query` has had (in the sample's order): which wait for a blind look, which
    for an adjudicator, and the positives counted (reads only)."""
    counts = dict(
        Judgment.objects.filter(query=query, image_id__in=sample)
        .values("image_id")
        .annotate(n=Count("id"))
        .values_list("image_id", "n")
    )
    finals = {
        image_id: (value, decided_by)
        for image_id, value, decided_by in Label.objects.filter(query=query, image_id__in=sample).values_list(
            "image_id", "value", "decided_by"
        )
    }
    wanted = max(2, query.judgments_wanted) if second_judgments else 1
    looked = [image_id for image_id in sample if counts.get(image_id, 0) >= wanted]
    adjudication, positives = [], 0
    for image_id in looked:
        value, decided_by = finals.get(image_id, ("", ""))
        if value == UNDECIDED or (second_judgments and value in SAMPLE_POSITIVE and decided_by != Decision.ADJUDICATED):
            adjudication.append(image_id)
        elif value in SAMPLE_POSITIVE:
            positives += 1
    return Progress(
        size=len(sample),
        labeled=len(looked),
        positives=positives,
        second=[image_id for image_id in sample if 0 < counts.get(image_id, 0) < wanted],
        adjudication=sorted(adjudication),
        unjudged=[image_id for image_id in sample if not counts.get(image_id, 0)],
        order=sample,
    )


def current(check: CompletenessCheck) -> Progress:
    """`check`'s progress as a page shows it (reads only). A decided check's figures are its stored ones."""
    if check.status != CompletenessCheck.Status.CHECKING:
        size = check.images.count()
        return Progress(size, size, check.positives or 0, second=[], adjudication=[], unjudged=[], order=[])
    return progress(check)


def decide(check: CompletenessCheck, now: Progress) -> None:
    found, outside = found_after(check.query, unpack(check.frame_ids), unpack(check.found_ids), now.order)
    claim = certify.claim(
        found, check.sampled_from, now.size, now.positives, check.target_recall, check.tested_at, check.miss_rate,
        confirmed_outside=min(outside, check.sampled_from - now.size),
    )  # fmt: skip
    with transaction.atomic():
        if not CompletenessCheck.objects.select_for_update().filter(pk=check.pk, status="checking").exists():
            check.refresh_from_db()  # another write decided it first
            return
        check.status = CompletenessCheck.Status.CERTIFIED if claim.certified else CompletenessCheck.Status.NOT_CERTIFIED
        check.found, check.positives = found, now.positives
        check.recall_lower_bound, check.p_value = claim.recall_lower_bound, claim.p_value
        check.missing_point, check.missing_low, check.missing_high = claim.missing
        check.decided_at = timezone.now()
        check.save()


def found_after(
    query: Query, frame: npt.NDArray[np.int64], found_ids: npt.NDArray[np.int64], sample: list[int]
) -> tuple[int, int]:
    """At a check's decision: (its confirmed positives at the draw still relevant, the frame's positives confirmed
    since the draw outside the sample). The second are among the images the sample bounds (certify.claim's
    `confirmed_outside`): found, though not known in advance."""
    found = len(in_frame(found_ids, _final_ids(query, [LabelValue.RELEVANT])))
    later = in_frame(frame, confirmed_positives(query))
    outside = len(np.setdiff1d(np.setdiff1d(later, found_ids), np.asarray(sample, dtype=np.int64)))
    return found, outside
