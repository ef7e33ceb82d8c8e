"""Completeness checks: draw a random sample of a query's frame, follow its labeling, state the claim.

A check is drawn over a frame (annotator.progress.frames) frozen at the draw: its positives (`found`: final label
relevant) and the rest, of which a simple random sample is drawn. The rest holds the images nobody has judged and
those judged not relevant (or unsure, or undecided): a positive the review judged not relevant by mistake is as
missing as one nobody has seen, and a claim that left them out would hold only for a team that never errs (on the
simulator, 171 of 189 certified claims held with annotators wrong 5% of the time: 90%, under the 95% promised).
A sampled image someone judged already gets a second, blind judgment. The sample's size is the least that
certifies the target if it meets no positive (certify.check_size); annotators label it in the normal grid (the
"completeness check" ranking) and through the API (candidates, strategy=check).

So that one mistaken click neither certifies nor blocks a query, every positive the claim counts gets a second,
blind judgment first: the frame's positives at the draw join the query's overlap sample, as do the sampled images
judged before, and so does every other sampled image the moment someone judges it relevant or unsure
(annotator.labels.writes does it in the same transaction).
Where the two judgments disagree, the final label waits for an adjudicator. The check is decided when every
sampled image is judged and nothing waits; then certify.claim states recall >= target with its confidence, or not.

Checking again after a failed check is a second look at the same question, and looks add up: the k-th check of a
query is tested at alpha / 2^k, so however many checks a query takes, the chance that a certified claim is wrong
stays under alpha (1/2 + 1/4 + ... < 1; the Bonferroni argument spent over an unbounded sequence of tests).
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
    Judgment,
    Label,
    LabelValue,
    OverlapImage,
    Query,
)
from annotator.progress import certify
from annotator.progress.check_requests import CheckRequest
from annotator.progress.frames import BadCheck, frame_image_ids, pack, unpack

# The values that count as a positive in the sample: unsure counts, so that doubt never helps a claim.
SAMPLE_POSITIVE = (LabelValue.RELEVANT, LabelValue.UNSURE)


def tested_at(confidence: float, ordinal: int) -> float:
    """The confidence the `ordinal`-th check of a query is tested at: alpha halves with each check (module doc)."""
    return 1.0 - (1.0 - confidence) / float(2**ordinal)


@dataclass(frozen=True)
class Situation:
    """A query's frame now: its ids, those someone judged, its positives (final label relevant), and what the
    next check would cost."""

    frame: npt.NDArray[np.int64]
    judged: npt.NDArray[np.int64]
    positives: npt.NDArray[np.int64]
    population: npt.NDArray[np.int64]  # what the sample is drawn from
    ordinal: int
    tested_at: float
    sample: int  # images the check labels if it meets no positive
    confirmations: int  # the frame's positives that still want a second judgment
    rejudged: int  # about how many sampled images were judged already (each gets a second, blind judgment)

    @property
    def found(self) -> int:
        return len(self.positives)

    @property
    def unlabeled(self) -> int:
        return len(self.frame) - len(self.judged)

    def as_json(self) -> dict[str, Any]:
        return {
            "frame_size": len(self.frame), "judged": len(self.judged), "found": self.found,
            "unlabeled": self.unlabeled, "sampled_from": len(self.population), "check": self.ordinal,
            "tested_at": self.tested_at, "sample": self.sample, "second_judgments": self.confirmations,
            "rejudged": self.rejudged,
        }  # fmt: skip


def situation(query: Query, request: CheckRequest) -> Situation:
    """What drawing `request` now would freeze and cost; BadCheck for a query with no labels or an empty frame."""
    if not Judgment.objects.filter(query=query).exists():
        raise BadCheck(
            f"Query {query.pk} has no labels yet: label down its ranking first; "
            "a check tells when to stop, not where to start."
        )
    frame = frame_image_ids(query, request.frame)
    if not len(frame):
        raise BadCheck("The frame holds no image: choose a deeper ranking, other taxa, or the collection.")
    judged = _in_frame(frame, Judgment.objects.filter(query=query).values_list("image_id", flat=True).distinct())
    positives = _in_frame(frame, _final_ids(query, [LabelValue.RELEVANT]))
    ordinal = query.completeness_checks.count() + 1
    confidence = tested_at(request.confidence, ordinal)
    # Trusting single judgments, the judged images are settled; else only the positives are (once confirmed).
    population = np.setdiff1d(frame, judged if not request.second_judgments else positives, assume_unique=True)
    sample = certify.check_size(len(positives), len(population), request.target, confidence)
    already = len(judged) - len(positives) if request.second_judgments else 0
    return Situation(
        frame=frame,
        judged=judged,
        positives=positives,
        population=population,
        ordinal=ordinal,
        tested_at=confidence,
        sample=sample,
        confirmations=len(_unconfirmed(query, positives)) if request.second_judgments else 0,
        rejudged=round(sample * already / len(population)) if len(population) else 0,
    )


def _in_frame(frame: npt.NDArray[np.int64], ids: Any) -> npt.NDArray[np.int64]:
    found = np.fromiter(ids, dtype=np.int64)
    return np.unique(found[np.isin(found, frame)])


def _final_ids(query: Query, values: Any) -> list[int]:
    return list(Label.objects.filter(query=query, value__in=list(values)).values_list("image_id", flat=True))


def _unconfirmed(query: Query, image_ids: Any) -> list[int]:
    """Those of `image_ids` with fewer judgments than the query wants."""
    ids = [int(image_id) for image_id in image_ids]
    counts = dict(
        Judgment.objects.filter(query=query, image_id__in=ids)
        .values("image_id")
        .annotate(n=Count("id"))
        .values_list("image_id", "n")
    )
    return [image_id for image_id in ids if counts.get(image_id, 0) < query.judgments_wanted]


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
    """Draw a check of `query` as `request` asks, or answer its open one: (check, drawn). The frame, the images
    judged in it and the sample are frozen in the check; the frame's positives that have one judgment join the
    overlap sample for their second. BadCheck (nothing drawn) for a query with no labels or an empty frame."""
    if (current := open_check(query)) is not None:
        return current, False
    found = situation(query, request)  # the rankings are read outside the transaction: seconds on a large frame
    # Fresh entropy, not a seed an annotator could replay: the sample must be as random to them as to the test.
    sample = np.random.default_rng().permutation(found.population)[: found.sample]
    try:
        with transaction.atomic():
            Query.objects.select_for_update().filter(pk=query.pk).get()  # two admins drawing at once: one check
            if (current := open_check(query)) is not None:
                return current, False
            check = CompletenessCheck.objects.create(
                query=query, ordinal=query.completeness_checks.count() + 1, frame_kind=request.frame.kind,
                frame_depth=request.frame.depth, frame_taxa=list(request.frame.taxa), frame_size=len(found.frame),
                frame_ids=pack(found.frame), found_ids=pack(found.positives), sampled_from=len(found.population),
                found_at_draw=found.found, target_recall=request.target, confidence=request.confidence,
                tested_at=found.tested_at, second_judgments=request.second_judgments, drawn_by=user,
            )  # fmt: skip
            CheckImage.objects.bulk_create(
                CheckImage(completeness_check=check, image_id=int(image_id), position=n)
                for n, image_id in enumerate(sample)
            )
            if request.second_judgments:  # the positives, and the sampled images judged already: one more judgment
                rejudged = np.intersect1d(sample, found.judged)
                unconfirmed = _unconfirmed(query, np.concatenate([found.positives, rejudged]))
                OverlapImage.objects.bulk_create(
                    [OverlapImage(query=query, image_id=image_id) for image_id in unconfirmed], ignore_conflicts=True
                )
    except IntegrityError:  # another draw committed first (the one-open-check constraint)
        current = open_check(query)
        if current is None:
            raise
        return current, False
    refresh(check)  # a sample of 0 (the frame is all labeled, or too small to hide the target) decides at once
    return check, True


@dataclass(frozen=True)
class Progress:
    size: int
    labeled: int  # sampled images judged, and not waiting for their second judgment
    positives: int  # sampled images whose final label is relevant or unsure
    second: list[int]  # images (sampled, or the frame's positives) waiting for a second blind judgment
    adjudication: list[int]  # images whose judgments disagree, waiting for an adjudicator
    unjudged: list[int]  # sampled images nobody has judged, in the sample's order

    @property
    def pending(self) -> int:
        return len(self.second) + len(self.adjudication)

    @property
    def complete(self) -> bool:
        return not self.unjudged and not self.pending


def progress(check: CompletenessCheck) -> Progress:
    """How far `check`'s labeling has come (read from the judgments and final labels now)."""
    query = check.query
    sample = list(check.images.values_list("image_id", flat=True))
    watched = set(sample)
    if check.second_judgments:  # the frame's positives counted by the claim, confirmed by a second judgment
        found = unpack(check.found_ids)
        watched.update(_in_frame(found, _final_ids(query, [LabelValue.RELEVANT, UNDECIDED])).tolist())
    counts = dict(
        Judgment.objects.filter(query=query, image_id__in=list(watched))
        .values("image_id")
        .annotate(n=Count("id"))
        .values_list("image_id", "n")
    )
    finals = dict(Label.objects.filter(query=query, image_id__in=list(watched)).values_list("image_id", "value"))
    in_overlap = OverlapImage.objects.filter(query=query, image_id__in=list(watched))
    overlap = set(in_overlap.values_list("image_id", flat=True))
    wanted = query.judgments_wanted
    second = [i for i in watched if counts.get(i, 0) and i in overlap and counts[i] < wanted and check.second_judgments]
    waiting = set(second)
    return Progress(
        size=len(sample),
        labeled=sum(1 for image_id in sample if counts.get(image_id, 0) and image_id not in waiting),
        positives=sum(1 for image_id in sample if finals.get(image_id) in SAMPLE_POSITIVE),
        second=sorted(second),
        adjudication=sorted(i for i in watched if finals.get(i) == UNDECIDED and i not in second),
        unjudged=[image_id for image_id in sample if not counts.get(image_id, 0)],
    )


def refresh(check: CompletenessCheck) -> Progress:
    """`check`'s progress, and its decision stored once it is complete. A decided check's claim is fixed, and so
    is what it says of its sample: read from the check, not from every judgment again (the side pane asks after
    every pause in labeling)."""
    if check.status != CompletenessCheck.Status.CHECKING:
        size = check.images.count()
        return Progress(size, labeled=size, positives=check.positives or 0, second=[], adjudication=[], unjudged=[])
    now = progress(check)
    if now.complete:
        _decide(check, now)
    return now


def _decide(check: CompletenessCheck, now: Progress) -> None:
    found = len(_in_frame(unpack(check.found_ids), _final_ids(check.query, [LabelValue.RELEVANT])))
    claim = certify.claim(found, check.sampled_from, now.size, now.positives, check.target_recall, check.tested_at)
    with transaction.atomic():
        if not CompletenessCheck.objects.select_for_update().filter(pk=check.pk, status="checking").exists():
            check.refresh_from_db()  # another request decided it first
            return
        check.status = CompletenessCheck.Status.CERTIFIED if claim.certified else CompletenessCheck.Status.NOT_CERTIFIED
        check.found, check.positives = found, now.positives
        check.recall_lower_bound, check.p_value = claim.recall_lower_bound, claim.p_value
        check.missing_point, check.missing_low, check.missing_high = claim.missing
        check.decided_at = timezone.now()
        check.save()


def candidates(query: Query, viewer: Writer, k: int) -> list[int]:
    """The images of `query`'s open check that `viewer` has not judged: first those waiting for a second blind
    judgment (they hold the claim up), then the sample's unjudged images in their random order."""
    check = open_check(query)
    if check is None:
        return []
    now = refresh(check)
    mine = Judgment.objects.filter(query=query, image_id__in=[*now.second, *now.unjudged])
    mine = mine.filter(annotator=viewer) if viewer is not None else mine.filter(annotator__isnull=True)
    judged = set(mine.values_list("image_id", flat=True))
    return [image_id for image_id in [*now.second, *now.unjudged] if image_id not in judged][:k]
