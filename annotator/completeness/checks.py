"""Completeness checks: draw a random sample of a query's frame, follow its labeling, state the claim.

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

The sample is sized to certify the target when it counts at most one positive (or none, where one cannot), tested
at the share of alpha its ordinal gets (certify.tested_at: 0.9 alpha first, the rest halving after). The check is
decided by the write that settles its last sampled image (annotator.completeness.sampled.decide_if_complete, connected
to annotator.labels' `judgments_settled` signal): reading a claim never writes one.

Blind judges see nothing through a check: its candidates come in the sample's random order, and whether an image
waits for a look depends on how many judged it, never on what they said.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
from django.db import IntegrityError, transaction
from django.db.models import Count
from django.utils import timezone

from annotator.completeness import certify, looks
from annotator.completeness.check_requests import ADJUDICATOR, LOOKS, CheckRequest
from annotator.completeness.frames import BadCheck, Frame, NothingToCheckYet, frame_of, freeze, pack, unpack
from annotator.labels import sealed
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
    QueryFrame,
)

# The values that count as a positive in the sample: unsure counts, so that doubt never helps a claim.
SAMPLE_POSITIVE = looks.CALLED
CONFIRMED = looks.CONFIRMED  # a positive the claim counts as found
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
    miss_rate: float  # the share of sampled positives the test takes its looks to lose (certify.pair_miss_rate)
    sample: int | None  # images the check labels; None: no sample can certify (certify.check_size)
    unconfirmed: int  # the frame's single-judgment positives waiting for an adjudicator's confirmation
    record: looks.LookRecord
    after_confirmation: int | None  # the sample once every unconfirmed positive is confirmed (the cheapest case)

    @property
    def found(self) -> int:
        return len(self.positives)

    def as_json(self) -> dict[str, Any]:
        return {
            "frame": self.frame.as_json(), "frame_size": len(self.frame.ids), "found": self.found,
            "sampled_from": len(self.population), "check": self.ordinal, "tested_at": self.tested_at,
            "miss_rate": self.record.bound, "tested_miss_rate": self.miss_rate, "per_look": self.record.as_json(),
            "sample": self.sample, "unconfirmed": self.unconfirmed, "looks_per_image": LOOKS,
            "looks": LOOKS * (self.sample or 0), "sample_after_confirmation": self.after_confirmation,
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
    record = looks.record()
    miss_rate = certify.pair_miss_rate(record.bound, LOOKS, ADJUDICATOR if request.second_judgments else 0.0)
    found, rest = len(positives), len(population)
    sample = certify.check_size(found, rest, request.target, confidence, miss_rate, tolerate=TOLERATE)
    after = (
        certify.check_size(found + unconfirmed, rest - unconfirmed, request.target, confidence, miss_rate, TOLERATE)
        if unconfirmed
        else sample
    )
    return Situation(frame, positives, population, ordinal, confidence, miss_rate, sample, unconfirmed, record, after)


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
        _continues(current, request)
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
            if found.unconfirmed and not request.with_unconfirmed:
                raise BadCheck(unconfirmed_words(found.unconfirmed, found.sample, found.after_confirmation))
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
                looks=LOOKS, per_look_miss_rate=found.record.bound,
            )  # fmt: skip
            CheckImage.objects.bulk_create(
                CheckImage(completeness_check=check, image_id=int(image_id), position=n)
                for n, image_id in enumerate(sample)
            )
            if request.second_judgments:  # a fresh look at an image someone judged is blind to the old vote
                seal_judged(query.pk, sample.tolist())
            if not len(sample):  # the frame is all settled, or too small to hide the target: decided at once
                decide(check, progress(check))
    except IntegrityError:  # another draw committed first (the one-open-check constraint)
        current = open_check(query)
        if current is None:
            raise
        return current, False
    return check, True


def _continues(check: CompletenessCheck, request: CheckRequest) -> None:
    """A request that meets an open check continues it, unless it declares another frame: BadCheck then, rather than
    answering with a check over a frame the request did not ask for."""
    declared = request.frame
    if declared is None:
        return
    top = CompletenessCheck.Frame.TOP
    if declared.kind != check.frame_kind or (declared.kind == top and declared.depth != check.frame_depth):
        raise BadCheck(
            f"Check {check.ordinal} of query {check.query_id} is open over its own frame ({check.frame_kind}"
            f"{f', depth {check.frame_depth}' if check.frame_depth else ''}): label its sample first; a new frame is "
            "declared at the next draw."
        )


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


def sample_figures(parts: Iterable[Progress]) -> dict[str, int]:
    """A sample's figures as every report shows them (one query's check: one part; the benchmark's: a part per
    query), in images, and they add up: size = labeled + waiting_for_look + left; the images waiting for an
    adjudicator are among those labeled (their looks are in) and `pending` is both waits together."""
    parts = list(parts)
    figures = {
        "size": sum(p.size for p in parts),
        "labeled": sum(p.labeled for p in parts),
        "positives": sum(p.positives for p in parts),
        "pending": sum(p.pending for p in parts),
        "left": sum(len(p.unjudged) for p in parts),
        "waiting_for_look": sum(len(p.second) for p in parts),
        "waiting_for_adjudicator": sum(len(p.adjudication) for p in parts),
    }
    return figures


def withheld_figures(size: int) -> dict[str, int | None]:
    """A sample's figures for a viewer who judges some of it blind: its size alone (how many looks were given would
    tell who has judged what they judge)."""
    return {"size": size, **dict.fromkeys(SAMPLE_FIGURES, None)}


SAMPLE_FIGURES = ("labeled", "positives", "pending", "left", "waiting_for_look", "waiting_for_adjudicator")


def progress(check: CompletenessCheck) -> Progress:
    """How far `check`'s labeling has come, read from the judgments and final labels now (reads only)."""
    sample = list(check.images.order_by("position").values_list("image_id", flat=True))
    return looks_at(check.query, sample, check.second_judgments, since=fresh_since(check), looks=check.looks)


def judged_by_everyone(query: Query, image_ids: list[int]) -> list[int]:
    """Those of `image_ids` (a check's images still wanting a look) that every person who has judged any image of
    `query` has judged already: nobody on the query's team can give them a fresh look, so they wait for someone new
    (reads only; names nobody and no vote, so blind viewers may read it)."""
    if not image_ids:
        return []
    team = set(Judgment.objects.filter(query=query).values_list("annotator_id", flat=True).distinct())
    if not team:
        return []
    judged: dict[int, set[int]] = {}
    for image_id, annotator_id in Judgment.objects.filter(query=query, image_id__in=image_ids).values_list(
        "image_id", "annotator_id"
    ):
        judged.setdefault(image_id, set()).add(annotator_id)
    return [image_id for image_id in image_ids if judged.get(image_id, set()) >= team]


def fresh_since(check: CompletenessCheck | Any) -> Any:
    """From when a judgment is a look of `check` (its draw); None for a check drawn before issue 62, whose images
    wanted two judgments in all."""
    return check.created_at if check.looks else None


def looks_at(
    query: Query, sample: list[int], second_judgments: bool = True, since: Any = None, looks: int = 0
) -> Progress:
    """The looks a check's `sample` of `query` has had (in the sample's order): which wait for a look, which for an
    adjudicator, and the positives counted (reads only). `since`: only judgments given from then on are looks,
    `looks` of them wanted; None: the older rule, every judgment counts and two are wanted."""
    counts, called = _looks_given(query, sample, since)
    if since is not None:
        wanted = max(1, looks)
    else:
        wanted = max(2, query.judgments_wanted) if second_judgments else 1
        called = set()  # the older rule reads the final label alone
    looked = [image_id for image_id in sample if counts.get(image_id, 0) >= wanted]
    adjudication, positives = _decided_or_waiting(query, looked, called, second_judgments)
    return Progress(
        size=len(sample),
        labeled=len(looked),
        positives=positives,
        second=[image_id for image_id in sample if 0 < counts.get(image_id, 0) < wanted],
        adjudication=adjudication,
        unjudged=[image_id for image_id in sample if not counts.get(image_id, 0)],
        order=sample,
    )


def _looks_given(query: Query, sample: list[int], since: Any) -> tuple[dict[int, int], set[int]]:
    """How many judgments each sampled image has (from `since` on, where given), and those any of them called a
    positive."""
    given = Judgment.objects.filter(query=query, image_id__in=sample)
    if since is not None:
        given = given.filter(created_at__gte=since)
    counts: dict[int, int] = {}
    called: set[int] = set()
    for image_id, value in given.values_list("image_id", "value"):
        counts[image_id] = counts.get(image_id, 0) + 1
        if value in SAMPLE_POSITIVE:
            called.add(image_id)
    return counts, called


def _decided_or_waiting(
    query: Query, looked: list[int], called: set[int], second_judgments: bool
) -> tuple[list[int], int]:
    """Of the images that had their looks: those waiting for an adjudicator (sorted), and the positives counted."""
    rows = Label.objects.filter(query=query, image_id__in=looked).values_list("image_id", "value", "decided_by")
    finals = {image_id: (value, decided_by) for image_id, value, decided_by in rows}
    adjudication, positives = [], 0
    for image_id in looked:
        value, decided_by = finals.get(image_id, ("", ""))
        # A look that called it a positive, or looks that split, go to the adjudicator whatever the old votes say.
        doubted = value in SAMPLE_POSITIVE or image_id in called
        if value == UNDECIDED or (second_judgments and doubted and decided_by != Decision.ADJUDICATED):
            adjudication.append(image_id)
        elif value in SAMPLE_POSITIVE:
            positives += 1
    return sorted(adjudication), positives


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
        sealed.open_images(check.query_id, now.order)  # its looks are in: revisions now go to the adjudicator


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
