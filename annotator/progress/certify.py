"""A completeness claim from a random check: recall at least T with confidence 1 - alpha over a frame.

When a check is drawn, the frame (the images a claim speaks of) holds `found` positives already labeled and
`unlabeled` other images (here: those not yet found, whether nobody judged them or someone judged them not
relevant; annotator.progress.checks says why), of which an unknown number K are positives. The check labels a
simple random sample of `sample` of them and meets `positives` (they join the labels).
The number met follows the hypergeometric law, so the sample bounds K, and with it the recall after the check:

    recall = (found + positives) / (found + K)

This is the stopping test of Callaghan and Müller-Hansen ("Statistical stopping criteria for automated
screening in systematic reviews", Systematic Reviews 9:273, 2020): reject "recall < T" when seeing so few
positives would be rarer than alpha had K been the smallest number of missing positives that puts recall
under T. Equivalently (and what the page shows) the one-sided upper confidence bound of K gives a lower bound
of recall that holds with confidence 1 - alpha. The tails are scipy.stats.hypergeom's; written here is only
the inversion, a binary search over K (the lower tail falls as K grows), which scipy does not offer.
"""

import math
from dataclasses import dataclass
from fractions import Fraction

from scipy.stats import hypergeom


@dataclass(frozen=True)
class Claim:
    """What a finished check says. `certified`: recall >= target with the stated confidence; `recall_lower_bound`
    holds with that confidence whatever the target; `missing` is the estimate of the positives the frame still
    hides after the check (point and two-sided interval at the same confidence)."""

    certified: bool
    recall_lower_bound: float
    p_value: float
    missing: tuple[float, int, int]  # (point, low, high)


def _check(found: int, unlabeled: int, sample: int, positives: int, confidence: float) -> None:
    for name, value in (("found", found), ("unlabeled", unlabeled), ("sample", sample), ("positives", positives)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number, 0 or more, not {value!r}.")
    if sample > unlabeled:
        raise ValueError(
            f"The sample ({sample}) cannot be larger than the unlabeled images it is drawn from ({unlabeled})."
        )
    if positives > sample:
        raise ValueError(f"The sample holds {sample} images: it cannot have met {positives} positives.")
    _check_share("confidence", confidence)


def _check_share(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1 or not math.isfinite(value):
        raise ValueError(f"{name} must be a share between 0 and 1 (0.95 is 95%), not {value!r}.")


def _lower_tail(positives: int, unlabeled: int, missing: int, sample: int) -> float:
    """P(a sample of `sample` meets `positives` or fewer positives | `missing` positives among `unlabeled`)."""
    return float(hypergeom(unlabeled, missing, sample).cdf(positives))


def missing_upper_bound(unlabeled: int, sample: int, positives: int, confidence: float) -> int:
    """The one-sided upper confidence bound of K, the positives among the `unlabeled` images before the check:
    the largest K for which meeting `positives` or fewer in the sample is still more likely than 1 - confidence.
    With probability at least `confidence` (over the draw), the true K is at most this: the draws that put K
    above it are those whose lower tail under K is 1 - confidence or less, together no likelier than that."""
    _check(0, unlabeled, sample, positives, confidence)
    alpha = 1 - confidence
    low, high = positives, unlabeled - (sample - positives)  # K can be no less than met, no more than room allows
    while low < high:  # the largest K in [low, high] with tail > alpha (the tail at K = positives is 1)
        middle = (low + high + 1) // 2
        if _lower_tail(positives, unlabeled, middle, sample) > alpha:
            low = middle
        else:
            high = middle - 1
    return low


def missing_interval(unlabeled: int, sample: int, positives: int, confidence: float) -> tuple[float, int, int]:
    """The positives the frame still hides after the check: the point estimate (unbiased: the sample's share of
    the unlabeled images, less those met) and a two-sided interval at `confidence` (each tail 1 - confidence over 2)."""
    _check(0, unlabeled, sample, positives, confidence)
    point = (positives * unlabeled / sample if sample else 0.0) - positives
    two_sided = 1 - (1 - confidence) / 2
    high = missing_upper_bound(unlabeled, sample, positives, two_sided) - positives
    low = _missing_lower_bound(unlabeled, sample, positives, two_sided) - positives
    return max(0.0, point), low, high


def _missing_lower_bound(unlabeled: int, sample: int, positives: int, confidence: float) -> int:
    """The smallest K for which meeting `positives` or more is still more likely than 1 - confidence."""
    alpha = 1 - confidence
    low, high = positives, unlabeled - (sample - positives)
    while low < high:  # the smallest K with P(X >= positives | K) > alpha (the upper tail grows with K)
        middle = (low + high) // 2
        upper_tail = 1.0 - (_lower_tail(positives - 1, unlabeled, middle, sample) if positives else 0.0)
        if upper_tail > alpha:
            high = middle
        else:
            low = middle + 1
    return low


def missing_at_target(found: int, target: float) -> int:
    """The fewest positives the frame may still hide with recall under `target`, `found` being labeled:
    recall = found / (found + K) < target exactly when K > found (1 - target) / target. In exact fractions
    (0.8 is 4/5, not 0.8000000000000000444): at recall exactly the target, a float's rounding would say under."""
    _check_share("target", target)
    share = Fraction(target).limit_denominator(10**6)
    return math.floor(found * (1 - share) / share) + 1


def claim(found: int, unlabeled: int, sample: int, positives: int, target: float, confidence: float) -> Claim:
    """The claim a finished check makes: `found` positives labeled in the frame before the check, `unlabeled`
    images of the frame nobody had judged, a simple random `sample` of them labeled, `positives` met there."""
    _check(found, unlabeled, sample, positives, confidence)
    _check_share("target", target)
    after = found + positives  # the sample's positives are labeled now
    upper = missing_upper_bound(unlabeled, sample, positives, confidence)
    bound = after / (found + upper) if found + upper else 1.0
    # The boundary of "recall < target": K missing before the check, with recall (found + positives) / (found + K).
    at_target = missing_at_target(after, target) + positives
    p_value = _lower_tail(positives, unlabeled, at_target, sample) if at_target <= unlabeled else 0.0
    return Claim(
        certified=p_value <= 1 - confidence,  # as the bound: recall_lower_bound >= target exactly then
        recall_lower_bound=bound,
        p_value=p_value,
        missing=missing_interval(unlabeled, sample, positives, confidence),
    )


def check_size(found: int, unlabeled: int, target: float, confidence: float) -> int:
    """How many of the `unlabeled` images a check must label to certify `target` when it meets no positive:
    the least a check costs (each positive it meets raises the bar). 0 when even every unlabeled image being
    positive would leave recall at the target; at most all of them (then nothing is left to miss)."""
    _check(found, unlabeled, 0, 0, confidence)
    at_target = missing_at_target(found, target)
    if at_target > unlabeled:
        return 0
    alpha = 1 - confidence
    low, high = 0, unlabeled
    while low < high:  # the smallest sample whose chance of meeting none of `at_target` positives is alpha or less
        middle = (low + high) // 2
        if _lower_tail(0, unlabeled, at_target, middle) <= alpha:
            high = middle
        else:
            low = middle + 1
    return low
