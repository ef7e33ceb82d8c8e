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

from annotator.labels.checked import CHECKED
from annotator.models import Decision, Judgment, Label, LabelValue, OverlapImage, Query
from annotator.progress import certify
from annotator.progress.check_requests import ENOUGH_LOOKS, LOOK_BOUND_CONFIDENCE, PER_LOOK

CALLED = CHECKED  # a look that calls an image relevant or unsure: a positive look
# A positive the claims count: two judgments agree on it, or an adjudicator decided it (annotator.progress.checks).
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
    """The team's per-look record now (reads only: the overlap samples' confirmed positives and their judgments)."""
    blind = set(OverlapImage.objects.values_list("query_id", "image_id").iterator(chunk_size=ROWS))
    decided = {
        (query_id, image_id): decided_by
        for query_id, image_id, decided_by in Label.objects.filter(
            value=LabelValue.RELEVANT, decided_by__in=CONFIRMED, image_id__in={i for _, i in blind}
        )
        .values_list("query_id", "image_id", "decided_by")
        .iterator(chunk_size=ROWS)
        if (query_id, image_id) in blind
    }
    per_image: dict[tuple[int, int], list[int]] = defaultdict(lambda: [0, 0])
    given = Judgment.objects.filter(
        query_id__in={q for q, _ in decided}, image_id__in={i for _, i in decided}, annotator__isnull=False
    )
    for query_id, image_id, value in given.values_list("query_id", "image_id", "value").iterator(chunk_size=ROWS):
        if (query_id, image_id) in decided:
            counts = per_image[(query_id, image_id)]
            counts[0] += 1
            counts[1] += value in CALLED
    # Only images whose seal is open (all the judgments their query wants, or an adjudicator's decision): a vote still
    # sealed to someone must not move a figure that a blind judge's dry run shows.
    wanted = dict(Query.objects.filter(pk__in={q for q, _ in per_image}).values_list("pk", "judgments_wanted"))
    trials, misses = tally(
        [
            (judged, called)
            for pair, (judged, called) in per_image.items()
            if judged >= max(2, wanted.get(pair[0], 2)) or decided[pair] == Decision.ADJUDICATED
        ]
    )
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
