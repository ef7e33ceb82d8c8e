"""How often one of the team's looks misses a positive: the per-look bound a completeness check is tested at.

Only blind looks tell: the images of overlap samples and checks (annotator.labels.sealed keeps each judgment there
blind to the others until the image has its judgments) whose final label is a confirmed positive (agreed, or an
adjudicator's relevant). On such an image each look is a trial when some other look called it relevant or unsure:
a look that then said not relevant missed it. With two looks, "both relevant" gives two trials and no miss, "one
each way" one trial and one miss; under independent looks that miss at rate p the ratio misses / trials estimates p
without bias (2p(1-p) / (2(1-p)^2 + 2p(1-p)) = p). Positives both looks missed are never confirmed, so they are not
seen here: that is the independence the bound assumes, and the claims say so.

The bound is the one-sided Clopper-Pearson upper bound at LOOK_BOUND_CONFIDENCE (certify.per_look_upper_bound),
or PER_LOOK (5%) until ENOUGH_LOOKS trials are counted. It is team-wide (every query's samples), read at each draw
and kept in the check.
"""

from collections import defaultdict
from dataclasses import dataclass

from django.db.models import Exists, OuterRef, Q

from annotator.completeness import certify
from annotator.completeness.check_requests import ENOUGH_LOOKS, LOOK_BOUND_CONFIDENCE, PER_LOOK
from annotator.labels import sealed
from annotator.labels.checked import CHECKED
from annotator.models import Decision, Label, LabelValue, OverlapImage

CALLED = CHECKED  # a look that calls an image relevant or unsure: a positive look
# A positive the claims count: two judgments agree on it, or an adjudicator decided it (annotator.completeness.checks).
CONFIRMED = (Decision.AGREED, Decision.MAJORITY, Decision.ADJUDICATED)


@dataclass(frozen=True)
class LookRecord:
    """The team's blind looks at confirmed positives: `trials` looks another look had found positive, `misses`
    of them not relevant, and the per-look bound a check is tested at."""

    trials: int
    misses: int
    bound: float
    measured: bool  # False: fewer than ENOUGH_LOOKS trials, so the bound is the assumed PER_LOOK

    def as_json(self) -> dict[str, object]:
        return {
            "per_look_bound": round(self.bound, 5),
            "measured": self.measured,
            "blind_looks_at_positives": self.trials,
            "missed": self.misses,
        }

    def words(self) -> str:
        if self.measured:
            return (
                f"{self.bound:.1%}, the {LOOK_BOUND_CONFIDENCE:.0%} upper bound from the team's {self.trials} blind "
                f"looks at confirmed positives ({self.misses} missed)"
            )
        return (
            f"{self.bound:.1%}, assumed until the team has {ENOUGH_LOOKS} blind looks at confirmed positives "
            f"({self.trials} so far)"
        )


def tally(looks: list[tuple[int, int]]) -> tuple[int, int]:
    """(trials, misses) over confirmed positives given as (judgments, of them relevant or unsure) each."""
    trials = misses = 0
    for judged, called in looks:
        if called >= 2:
            trials, misses = trials + judged, misses + judged - called
        elif called == 1:
            trials, misses = trials + judged - 1, misses + judged - 1
    return trials, misses


def record() -> LookRecord:
    """The team's per-look record now (reads only: the opened samples' confirmed positives and their blind votes)."""
    # Only images whose seal is open (staff opened the sample, a check was decided, or an adjudicator decided the
    # image): a vote still sealed to someone must not move a figure that a blind judge's dry run shows.
    adjudicated = Label.objects.filter(
        query_id=OuterRef("query_id"), image_id=OuterRef("image_id"), decided_by=Decision.ADJUDICATED
    )
    opened = OverlapImage.objects.filter(Q(opened_at__isnull=False) | Exists(adjudicated))
    blind = set(opened.values_list("query_id", "image_id").iterator(chunk_size=ROWS))
    decided = {
        (query_id, image_id)
        for query_id, image_id in Label.objects.filter(
            value=LabelValue.RELEVANT, decided_by__in=CONFIRMED, image_id__in={i for _, i in blind}
        )
        .values_list("query_id", "image_id")
        .iterator(chunk_size=ROWS)
        if (query_id, image_id) in blind
    }
    # Each judge's blind vote is the look, revised or withdrawn since.
    given = sealed.counted_votes("value", query_id__in={q for q, _ in decided}, image_id__in={i for _, i in decided})
    per_image: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    for (query_id, image_id, _), (value,) in given.items():
        if (query_id, image_id) in decided:
            counts = per_image[(query_id, image_id)]
            counts[0] += 1
            counts[1] += value in CALLED
    trials, misses = tally([(judged, called) for judged, called in per_image.values() if judged >= 2])
    if trials < ENOUGH_LOOKS:
        return LookRecord(trials, misses, PER_LOOK, measured=False)
    return LookRecord(trials, misses, certify.per_look_upper_bound(misses, trials, LOOK_BOUND_CONFIDENCE), True)


ROWS = 5000


def assumption_words(looks: int, per_look: float | None, tested: float) -> str:
    """What a check assumes of its looks, in the words every claim uses (per query and benchmark alike)."""
    if not looks or per_look is None:  # drawn before issue 62: two judgments in all, the review's counted
        return f"assuming the looks lose at most {tested:.1%} of sampled positives"
    times = "once" if looks == 1 else f"{looks} times"
    return (
        f"each sampled image looked at {times} after the draw, assuming a look misses at most {per_look:.1%} of "
        f"positives and looks err independently (at most {tested:.2%} of sampled positives lost, the "
        "adjudicator's rejections included)"
    )
