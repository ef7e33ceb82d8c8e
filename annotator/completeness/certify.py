"""A completeness claim from a random check: recall at least T with confidence 1 - alpha over a frame.

When a check is drawn, the frame (the images a claim speaks of) holds `found` positives already labeled and
`unlabeled` other images (here: those not yet found, whether nobody judged them or someone judged them not
relevant; annotator.completeness.checks says why), of which an unknown number K are positives. The check labels a
simple random sample of `sample` of them and meets `positives` (they join the labels).
The number met follows the hypergeometric law, so the sample bounds K, and with it the recall after the check:

    recall = (found + positives) / (found + K)

This is the stopping test of Callaghan and Müller-Hansen ("Statistical stopping criteria for automated
screening in systematic reviews", Systematic Reviews 9:273, 2020): reject "recall < T" when seeing so few
positives would be rarer than alpha had K been the smallest number of missing positives that puts recall
under T. Equivalently (and what the page shows) the one-sided upper confidence bound of K gives a lower bound
of recall that holds with confidence 1 - alpha. The tails are scipy.stats.hypergeom's (the thinned one below sums
its pmf's terms, reached from one of scipy's by their ratio: _hypergeom_pmfs says why); written here is the
inversion, a binary search over K (the lower tail falls as K grows), which scipy does not offer.

Annotators miss positives. A check looks at each sampled image afresh, blind, and an adjudicator decides every
sampled image a look called relevant or unsure; a true positive is then lost only when its looks miss it or the
adjudicator does. The test takes that as a bound `miss_rate` on the chance that a sampled positive is
not counted, and tests the thinned count: each of the X positives the sample holds is counted with probability
1 - miss_rate, so the count met is Binomial(X, 1 - miss_rate) given X, and its lower tail is

    P(met <= x | K) = sum_j hypergeom(U, K, n).pmf(j) * binom(j, 1 - miss_rate).cdf(x)

which is the plain tail at miss_rate 0, grows with miss_rate (so a true rate under the bound keeps the level)
and still falls as K grows (more positives, stochastically more met). Without it the first check's real level
at 5% annotator mistakes and one look at negatives was 0.030 for 0.025 at F = 180 and 0.074 at F = 5 (issue 51).

Which looks count. A positive still missing when a check is drawn is, by selection, one that every earlier look
missed: the review's "not relevant" on it is a miss already made, not a look the check may count (issue 62 measured
the first check's real level at 0.0585 where 0.045 was stated, counting it). So only looks given after the draw
count (annotator.completeness.checks), each sampled pair gets `looks` of them, and a sampled positive is lost when every
fresh look misses it or the adjudicator rejects it: `pair_miss_rate` combines a per-look bound (from the team's
own blind looks at confirmed positives, annotator.completeness.looks) with the adjudicator's allowance. Looks that
err together (a hard image every annotator misses) are not covered by a bound measured on independent looks: the
claims say "assuming looks err independently".

Looks add up: a query's k-th check (annotator.completeness.checks) is tested at the share of alpha that
`tested_at` gives it; the shares sum to alpha, so the chance that any certified claim is wrong stays under it.

A query's check is drawn in two stages (staged_sizes): its sample and test are the one-stage check's, and its first
pairs in the sample's random order certify if they count no positive, without the rest. A one-stage test errs most
where a few more positives than it tolerates hide; a first stage counting none errs most where a few more than none
hide, where the whole test errs rarely (its sample meets them, and they lift the recall it claims). The first stage
is the fewest pairs with which the two together err at most alpha at every truth, computed exactly (staged_level:
at 46 confirmed positives and 1,500 other images, 877 of 1,048 pairs, at a worst level of 0.044998 for a stated
0.045). This is Dodge and Romig's double sampling ("A method of sampling inspection", Bell System Technical Journal
8:613, 1929) with acceptance on none found in the first sample, sized by the exact joint level instead of splitting
alpha between the stages (measured: splitting it cost more than one stage).

The benchmark's claim (annotator.completeness.benchmark) is the same test over the union of the queries' frames:
one simple random sample of the (query, image) pairs that are not confirmed positives bounds the positives all
frames still hide together, so micro-recall (every positive found over every positive in the frames) is at
least its lower bound. A simple random sample of the union, restricted to one query's pairs, is a simple random
sample of those pairs given its size, so each query's share also gives an interval of its own recall
(`recall_interval`): reported, not certified (nothing is spent on it).
"""

import functools
import math
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
from scipy.stats import beta, binom, hypergeom


@dataclass(frozen=True)
class Claim:
    """What a finished check says. `certified`: recall >= target with the stated confidence; `recall_lower_bound`
    holds with that confidence whatever the target; `missing` is the estimate of the positives the frame still
    hides after the check (point and two-sided interval at the same confidence)."""

    certified: bool
    recall_lower_bound: float
    p_value: float
    missing: tuple[float, int, int]  # (point, low, high)
    miss_rate: float = 0.0


def _check_counts(**counts: int) -> None:
    """Each named value a whole number, 0 or more (a bool is not one), or a ValueError naming it."""
    for name, value in counts.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"{name} must be a whole number, 0 or more, not {value!r}.")


def _check(found: int, unlabeled: int, sample: int, positives: int, confidence: float, miss_rate: float = 0.0) -> None:
    _check_counts(found=found, unlabeled=unlabeled, sample=sample, positives=positives)
    if sample > unlabeled:
        raise ValueError(
            f"The sample ({sample}) cannot be larger than the unlabeled images it is drawn from ({unlabeled})."
        )
    if positives > sample:
        raise ValueError(f"The sample holds {sample} images: it cannot have met {positives} positives.")
    _check_share("confidence", confidence)
    if isinstance(miss_rate, bool) or not isinstance(miss_rate, int | float) or not 0 <= miss_rate < 1:
        raise ValueError(f"miss_rate must be a share from 0 up to 1 (0.005 is 0.5%), not {miss_rate!r}.")


def _check_share(name: str, value: float) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float) or not 0 < value < 1 or not math.isfinite(value):
        raise ValueError(f"{name} must be a share between 0 and 1 (0.95 is 95%), not {value!r}.")


def _lower_tail(positives: int, unlabeled: int, missing: int, sample: int, miss_rate: float = 0.0) -> float:
    """P(a sample of `sample` counts `positives` or fewer positives | `missing` positives among `unlabeled`, each
    sampled positive missed with probability `miss_rate`): the thinned tail of the module's doc."""
    if not miss_rate:
        return float(hypergeom.cdf(positives, unlabeled, missing, sample))
    first, last = max(0, sample - (unlabeled - missing)), min(sample, missing)
    # P(counting <= positives | j held) falls steeply once j passes positives / (1 - miss_rate): the sum runs only
    # up to the first j where it is under NEGLIGIBLE, and the rest is bounded by that value times P(more held).
    # The tail is then overstated by at most NEGLIGIBLE (a check never certifies on the cut), and a frame of 250
    # queries is tested over tens of terms instead of the sample's thousands (issue 51's simulator: 8 s of 14).
    # Few terms: the whole sum is quicker than finding where to cut it.
    cut = last if last - first < WHOLE else _last_counted(first, last, positives, miss_rate)
    if cut < first:
        return float(min(1.0, binom.cdf(positives, first, 1.0 - miss_rate)))
    held = np.arange(first, cut + 1)
    drawn = _hypergeom_pmfs(first, cut, unlabeled, missing, sample)
    kept = float(np.sum(drawn * binom.cdf(positives, held, 1.0 - miss_rate)))
    if cut == last:
        return min(1.0, kept)
    rest = binom.cdf(positives, cut + 1, 1.0 - miss_rate) * hypergeom.sf(cut, unlabeled, missing, sample)
    return min(1.0, kept + float(rest))


def _hypergeom_pmfs(first: int, last: int, unlabeled: int, missing: int, sample: int) -> np.ndarray:
    """hypergeom(unlabeled, missing, sample).pmf(j) for j from `first` to `last`: scipy's at the most likely j of
    the range, the others from it by the ratio of consecutive terms, P(j + 1) / P(j) = (K - j)(n - j) / ((j + 1)
    (U - K - n + j + 1)). scipy's pmf (Boost's) costs about 8 microseconds a term, and a check's tail sums
    hundreds of terms dozens of times per claim: most of a claim's time (0.1 s at U = 3,000). The terms are within
    1e-10 of the exact values, as scipy's own are at a benchmark's U = 243,299 (each within about 5e-11 there;
    tests/annotator/test_certify.py checks ours against exact integers); each is reached from the largest by ratios
    under 1, so none overflows, and those far in the tails underflow to 0."""
    top = min(max((sample + 1) * (missing + 1) // (unlabeled + 2), first), last)  # the law's mode, kept in range
    anchor = float(hypergeom.pmf(top, unlabeled, missing, sample))
    j = np.arange(first, last, dtype=np.float64)  # ratio i takes term first + i to first + i + 1
    ratios = (missing - j) * (sample - j) / ((j + 1) * (unlabeled - missing - sample + j + 1))
    terms = np.empty(last - first + 1)
    at = top - first
    terms[at] = anchor
    terms[at + 1 :] = anchor * np.cumprod(ratios[at:])
    with np.errstate(over="ignore"):  # a product past the largest float is a term under the smallest: 0
        terms[:at] = anchor / np.cumprod(ratios[:at][::-1])[::-1]
    return terms


NEGLIGIBLE = 1e-18
WHOLE = 512  # counts a sample may hold under which the tail is summed whole


def _last_counted(first: int, last: int, positives: int, miss_rate: float) -> int:
    """The largest j in [first, last] with P(Binomial(j, 1 - miss_rate) <= positives) >= NEGLIGIBLE (first - 1 when
    none): a binary search, the probability falling as j grows."""
    low, high = first - 1, last
    while low < high:
        middle = (low + high + 1) // 2
        if binom.cdf(positives, middle, 1.0 - miss_rate) >= NEGLIGIBLE:
            low = middle
        else:
            high = middle - 1
    return low


def missing_upper_bound(unlabeled: int, sample: int, positives: int, confidence: float, miss_rate: float = 0.0) -> int:
    """The one-sided upper confidence bound of K, the positives among the `unlabeled` images before the check:
    the largest K for which counting `positives` or fewer in the sample is still more likely than 1 - confidence.
    With probability at least `confidence` (over the draw and the looks), the true K is at most this: the draws
    that put K above it are those whose lower tail under K is 1 - confidence or less, together no likelier than
    that."""
    _check(0, unlabeled, sample, positives, confidence, miss_rate)
    alpha = 1 - confidence
    low, high = positives, unlabeled - (sample - positives)  # K can be no less than met, no more than room allows
    while low < high:  # the largest K in [low, high] with tail > alpha (the tail at K = positives is 1)
        middle = (low + high + 1) // 2
        if _lower_tail(positives, unlabeled, middle, sample, miss_rate) > alpha:
            low = middle
        else:
            high = middle - 1
    return low


def missing_interval(
    unlabeled: int, sample: int, positives: int, confidence: float, miss_rate: float = 0.0
) -> tuple[float, int, int]:
    """The positives the frame still hides after the check: the point estimate (unbiased with no misses: the
    sample's share of the unlabeled images, less those met) and a two-sided interval at `confidence` (each tail
    1 - confidence over 2)."""
    _check(0, unlabeled, sample, positives, confidence, miss_rate)
    point = (positives * unlabeled / sample if sample else 0.0) - positives
    two_sided = 1 - (1 - confidence) / 2
    high = missing_upper_bound(unlabeled, sample, positives, two_sided, miss_rate) - positives
    low = _missing_lower_bound(unlabeled, sample, positives, two_sided) - positives
    return max(0.0, point), low, high


def _missing_lower_bound(unlabeled: int, sample: int, positives: int, confidence: float) -> int:
    """The smallest K for which meeting `positives` or more is still more likely than 1 - confidence. (Misses only
    lower what is met, so the unthinned tail keeps this bound valid whatever the miss rate.)"""
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
    (0.8 is 4/5, not 0.8000000000000000444): at recall exactly the target, a float's rounding would say under.
    The target is read to six decimals: 1e-300 is refused, not divided by."""
    _check_share("target", target)
    share = Fraction(target).limit_denominator(10**6)
    if share <= 0 or share >= 1:
        raise ValueError(f"target must be a share between 0.000001 and 0.999999, not {target!r}.")
    return math.floor(found * (1 - share) / share) + 1


def claim(
    found: int,
    unlabeled: int,
    sample: int,
    positives: int,
    target: float,
    confidence: float,
    miss_rate: float = 0.0,
    confirmed_outside: int = 0,
) -> Claim:
    """The claim a finished check makes: `found` confirmed positives in the frame before the check, `unlabeled`
    images of the frame the sample was drawn from, a simple random `sample` of them labeled, `positives` counted
    there, each true positive of the sample missed with probability at most `miss_rate`. `confirmed_outside`:
    positives of the unlabeled images outside the sample confirmed since the draw; they are among the K the
    sample bounds, so they raise what is found, not what is known to be missing."""
    _check(found, unlabeled, sample, positives, confidence, miss_rate)
    _check_share("target", target)
    _check_counts(confirmed_outside=confirmed_outside)
    after = found + positives + confirmed_outside  # the sample's positives are labeled now
    upper = max(missing_upper_bound(unlabeled, sample, positives, confidence, miss_rate), positives + confirmed_outside)
    bound = after / (found + upper) if found + upper else 1.0
    p_value = _p_value(found, unlabeled, sample, positives, target, miss_rate, confirmed_outside)
    return Claim(
        certified=p_value <= 1 - confidence,  # as the bound: recall_lower_bound >= target exactly then
        recall_lower_bound=bound,
        p_value=p_value,
        missing=missing_interval(unlabeled, sample, positives, confidence, miss_rate),
        miss_rate=miss_rate,
    )


def _p_value(
    found: int, unlabeled: int, sample: int, positives: int, target: float, miss_rate: float, confirmed_outside: int
) -> float:
    """claim's p-value: the chance of counting `positives` or fewer at the boundary of "recall < target", the K
    missing before the check at which recall, (found + positives + confirmed_outside) / (found + K), falls under it."""
    at_target = missing_at_target(found + positives + confirmed_outside, target) + positives + confirmed_outside
    return _lower_tail(positives, unlabeled, at_target, sample, miss_rate) if at_target <= unlabeled else 0.0


def most_positives(
    found: int, unlabeled: int, sample: int, target: float, confidence: float, miss_rate: float = 0.0,
    confirmed_outside: int = 0,
) -> int:  # fmt: skip
    """The most positives a check of `sample` can count and still certify (claim's test, the same arguments); -1
    when no count certifies. No count above it certifies (`counts_to_try` says why), so a check that has counted
    more has failed whatever its other pairs show (can_certify). Fewer do not always certify: where few positives
    are found, one more met can raise the boundary by two and certify where none did."""
    counts = counts_to_try(found, unlabeled, sample, target, confidence, miss_rate, confirmed_outside)
    alpha = 1 - confidence
    tested = ((x, _p_value(found, unlabeled, sample, x, target, miss_rate, confirmed_outside)) for x in counts)
    return max((x for x, p_value in tested if p_value <= alpha), default=-1)


def can_certify(
    found: int, unlabeled: int, sample: int, positives: int, target: float, confidence: float, miss_rate: float = 0.0,
    confirmed_outside: int = 0,
) -> bool:  # fmt: skip
    """Whether a check that has counted `positives` in the part of its `sample` looked at so far may still certify
    once the rest is: some count from `positives` up certifies (claim's test, the same arguments). When none does,
    the check has failed whatever its other pairs show, and is decided then (annotator.completeness.checks): the
    decision its whole sample would give, for fewer looks. Curtailed sampling can only turn a certificate into a
    failure, never the reverse, so the claim's level holds whatever order the looks come in. Tried from
    `positives` up, so a check that still can certify costs one test on most writes."""
    _check(found, unlabeled, sample, positives, confidence, miss_rate)
    counts = counts_to_try(found, unlabeled, sample, target, confidence, miss_rate, confirmed_outside)
    alpha = 1 - confidence
    return any(
        _p_value(found, unlabeled, sample, x, target, miss_rate, confirmed_outside) <= alpha
        for x in counts
        if x >= positives
    )


def counts_to_try(
    found: int, unlabeled: int, sample: int, target: float, confidence: float, miss_rate: float = 0.0,
    confirmed_outside: int = 0,
) -> range:  # fmt: skip
    """The counts of positives a check of `sample` may certify at: every count above these fails claim's test.

    Markov's inequality rules out the rest: at the boundary K(x) <= A + x / T of a count x (A = (found + c)(1 - T)
    / T + 1 + c, c confirmed outside the sample), the count met has mean r K(x), r the sampled share times
    1 - miss_rate, so P(met <= x) >= 1 - r K(x) / (x + 1), more than alpha once r (A + x / T) < (1 - alpha)(x + 1):
    for every larger x when r / T < 1 - alpha. Where the largest count's boundary lies beyond the unlabeled images,
    that count certifies whatever was met (claim's p-value 0): every count is tried then."""
    _check(found, unlabeled, sample, 0, confidence, miss_rate)
    _check_share("target", target)
    _check_counts(confirmed_outside=confirmed_outside)
    alpha, extra = 1 - confidence, confirmed_outside
    if missing_at_target(found + sample + extra, target) + sample + extra > unlabeled:
        return range(sample + 1)
    share = (sample / unlabeled if unlabeled else 0.0) * (1 - miss_rate)
    slope = share / target - (1 - alpha)
    start = (found + extra) * (1 - target) / target + 2 + extra  # + 1: the target is read to six decimals
    last = sample if slope >= 0 else min(sample, max(0, math.ceil((share * start - (1 - alpha)) / -slope)))
    return range(last + 1)


def check_size(
    found: int, unlabeled: int, target: float, confidence: float, miss_rate: float = 0.0, tolerate: int = 0
) -> int | None:
    """How many of the `unlabeled` images a check must label to certify `target` whenever it counts at most
    `tolerate` positives: the least a check costs (each positive beyond that raises the bar). The largest of the
    least sizes that certify at each count from none to `tolerate`: the boundary moves in whole positives as those
    met join the found, so a sample that certifies on meeting three may not on meeting one (15 confirmed positives
    and 589 other images: 530 pairs certify on three, 565 on two; bench/RESULTS.md). A count no sample certifies
    caps the tolerance one below it. 0 when even every unlabeled image being positive would leave recall at the
    target. None when no sample can certify on meeting none: with misses, even labeling every image may count too
    few (a frame of 5 positives tested at 0.25% with a 0.5% miss rate)."""
    _check(found, unlabeled, 0, 0, confidence, miss_rate)
    _check_counts(tolerate=tolerate)
    if missing_at_target(found, target) > unlabeled:
        return 0
    alpha = 1 - confidence
    # Per count: the positives missing at the boundary it is tested at. A count no check certifies on caps the
    # tolerance one below it, even where a larger count has a boundary again: a check certifies on every count it
    # tolerates (drawing one that a clean frame cannot pass cost 1.07x the labels in the simulator).
    boundaries = []
    for count in range(tolerate + 1):
        at_target = _boundary(found, unlabeled, target, alpha, miss_rate, count)
        if at_target is None:
            break
        boundaries.append(at_target)
    size = 0
    # The top count's size is almost always the largest: each count below is checked against it (one tail), and
    # searched only where it fails. A search per count cost 19-33x one search on a benchmark's check.
    for count in reversed(range(len(boundaries))):
        if size == 0 or _lower_tail(count, unlabeled, boundaries[count], size, miss_rate) > alpha:
            size = _least_sample(count, unlabeled, boundaries[count], alpha, miss_rate, max(count, size))
    return size if boundaries else None


@functools.lru_cache(maxsize=256)  # 0.02-0.4 s a frame (bench/staged_size_bench.py); the cost box asks again
def staged_sizes(
    found: int, unlabeled: int, target: float, confidence: float, miss_rate: float = 0.0, tolerate: int = 0
) -> tuple[int, int] | None:
    """A check in two stages: (its first stage's pairs, its whole sample). The whole sample is check_size's, tested
    by claim as one stage is; its first pairs, in the sample's random order, certify if they count no positive. The
    first stage is the fewest pairs with which the two together still err at most alpha at every truth
    (staged_level, computed exactly): the one-stage test errs most where a few positives more than it tolerates
    hide, a first stage where a few more than none do, so the first stage spends the alpha the whole test leaves
    unspent at small truths (Dodge and Romig's double sampling, here with the acceptance on none found in the first
    sample and the second sample's test unchanged). (0, size) where a first stage would save nothing; None where no
    sample can certify."""
    whole = check_size(found, unlabeled, target, confidence, miss_rate, tolerate)
    if whole is None:
        return None
    alpha = 1 - confidence
    # No first stage shorter than the check that certifies on none alone: at the boundary of none counted, the level
    # is at least the chance that the first stage counts none.
    low, high = max(1, check_size(found, unlabeled, target, confidence, miss_rate) or 1), whole
    while low < high:  # the level falls as the first stage grows (checked below whatever the search finds)
        middle = (low + high) // 2
        if staged_level(found, unlabeled, middle, whole, target, confidence, miss_rate) <= alpha:
            high = middle
        else:
            low = middle + 1
    if low >= whole or staged_level(found, unlabeled, low, whole, target, confidence, miss_rate) > alpha:
        return 0, whole
    return low, whole


def staged_level(
    found: int, unlabeled: int, first: int, whole: int, target: float, confidence: float, miss_rate: float = 0.0
) -> float:
    """The most, over every number K of positives hidden among the `unlabeled` images, of the chance that a check
    of `whole` pairs whose first `first` pairs certify on counting none gives a wrong certificate (staged_level_at).
    Evaluated from the boundary of none counted up, until a bound of every later term is no more than the worst
    found, or a first stage counting none is negligible (then every later term is within NEGLIGIBLE of the one-stage
    test's, which claim keeps at most alpha)."""
    _check(found, unlabeled, whole, 0, confidence, miss_rate)
    if not 0 < first <= whole:
        raise ValueError(f"A first stage of {first} pairs must lie within the whole sample of {whole}.")
    certifying = _certifying(found, unlabeled, whole, target, confidence, miss_rate)
    last = max(_boundaries(found, target, certifying), default=0)
    worst = 0.0
    for missing in range(missing_at_target(found, target), unlabeled + 1):
        level, none_first = _staged_terms(found, unlabeled, first, whole, target, confidence, miss_rate, missing)
        worst = max(worst, level)
        # Where a first stage counting none is negligible, P(wrong | K) is the one-stage test's (at most alpha, as
        # claim's test guarantees) plus at most NEGLIGIBLE, at this K and every larger one (it falls with K).
        if none_first < NEGLIGIBLE:
            break
        # Past the last boundary every certificate is wrong, so P(wrong | K) is at most P(C1 = 0) + P(C2 <= the
        # largest count that certifies), and both fall as K grows: once that is no more than the worst, so is
        # every later term.
        if missing > last and none_first + _counted_at_most(
            max(certifying, default=-1), unlabeled, whole, missing, miss_rate
        ) <= worst:  # fmt: skip
            break
    return worst


def staged_level_at(
    found: int, unlabeled: int, first: int, whole: int, target: float, confidence: float, miss_rate: float,
    missing: int, lost: float | None = None,
) -> float:  # fmt: skip
    """The chance that a check of `whole` pairs, tested at `miss_rate`, whose first `first` pairs certify on counting
    none, gives a wrong certificate when `missing` positives hide among the `unlabeled` images: its first stage
    counts none while recall is under the target, or it counts some and the whole sample's count c certifies
    (claim's test at `confidence`) with (found + c) / (found + K) under the target. Each hidden positive is
    countable with probability 1 - `lost` (the looks' and the adjudicator's true loss; `miss_rate` unless given):
    given the K' countable ones, the first stage's count is hypergeometric, and so are the whole sample's and,
    given the first counts none, the rest's:

        P(wrong | K) = P(C1 = 0) + P(C2 in S) - P(C1 = 0) P(C2 - C1 in S | C1 = 0)

    with S the counts whose certificate is wrong at K (and K past the boundary of none counted)."""
    _check(found, unlabeled, whole, 0, confidence, miss_rate)
    return _staged_terms(found, unlabeled, first, whole, target, confidence, miss_rate, missing, lost)[0]


def _staged_terms(
    found: int, unlabeled: int, first: int, whole: int, target: float, confidence: float, miss_rate: float,
    missing: int, lost: float | None = None,
) -> tuple[float, float]:  # fmt: skip
    """(staged_level_at, P(the first stage counts none)) at `missing`."""
    if missing < missing_at_target(found, target):
        return 0.0, 1.0  # recall is at the target with none met: no certificate is wrong
    certifying = _certifying(found, unlabeled, whole, target, confidence, miss_rate)
    countable = np.arange(missing + 1)
    weights = binom.pmf(countable, missing, 1.0 - (miss_rate if lost is None else lost))
    kept = weights > NEGLIGIBLE
    countable, weights = countable[kept], weights[kept]
    none_first = hypergeom.pmf(0, unlabeled, countable, first)
    boundaries = _boundaries(found, target, certifying)
    wrong = _runs([c for c, boundary in zip(certifying, boundaries, strict=True) if missing >= boundary])
    in_whole = _in_runs(wrong, unlabeled, countable, whole)
    in_rest = _in_runs(wrong, unlabeled - first, countable, whole - first)
    level = float(np.sum(weights * (none_first + in_whole - none_first * in_rest)))
    return level, float(np.sum(weights * none_first))


def _counted_at_most(count: int, unlabeled: int, sample: int, missing: int, miss_rate: float) -> float:
    """P(a sample of `sample` counts at most `count` of `missing` positives, each counted with probability 1 -
    `miss_rate`): the thinned tail."""
    return _lower_tail(count, unlabeled, missing, sample, miss_rate) if count >= 0 else 0.0


@functools.lru_cache(maxsize=64)
def _certifying(
    found: int, unlabeled: int, sample: int, target: float, confidence: float, miss_rate: float
) -> tuple[int, ...]:
    """The counts on which a check of `sample` certifies (claim's test): the same for every first stage a search of
    staged_sizes tries, so computed once."""
    alpha = 1 - confidence
    counts = counts_to_try(found, unlabeled, sample, target, confidence, miss_rate)
    return tuple(c for c in counts if _p_value(found, unlabeled, sample, c, target, miss_rate, 0) <= alpha)


@functools.lru_cache(maxsize=64)
def _boundaries(found: int, target: float, counts: tuple[int, ...]) -> tuple[int, ...]:
    """For each of `counts`, the fewest positives hidden before the check that leave recall under the target once
    that many are counted: a certificate on that count is wrong from there up."""
    return tuple(missing_at_target(found + count, target) + count for count in counts)


def _runs(counts: list[int]) -> list[tuple[int, int]]:
    """Sorted `counts` as runs of consecutive ones, (first, last) each: a check certifies on a few runs of counts
    (mostly one), so a chance over them is a few differences of the cdf instead of a term per count."""
    runs: list[tuple[int, int]] = []
    for count in counts:
        if runs and count == runs[-1][1] + 1:
            runs[-1] = (runs[-1][0], count)
        else:
            runs.append((count, count))
    return runs


def _in_runs(runs: list[tuple[int, int]], unlabeled: int, countable: np.ndarray, sample: int) -> np.ndarray:
    """For each number of countable positives among `unlabeled` images, the chance a sample of `sample` counts a
    number within `runs` (hypergeometric)."""
    chance = np.zeros(len(countable))
    for low, high in runs:
        below = hypergeom.cdf(low - 1, unlabeled, countable, sample) if low else 0.0
        chance += hypergeom.cdf(high, unlabeled, countable, sample) - below
    return chance


def _least_sample(count: int, unlabeled: int, at_target: int, alpha: float, miss_rate: float, low: int) -> int:
    """The least sample from `low` up whose chance of counting `count` or fewer positives, `at_target` missing, is
    at most alpha (a binary search: the chance falls as the sample grows)."""
    high = unlabeled
    while low < high:
        middle = (low + high) // 2
        if _lower_tail(count, unlabeled, at_target, middle, miss_rate) <= alpha:
            high = middle
        else:
            low = middle + 1
    return low


def _boundary(found: int, unlabeled: int, target: float, alpha: float, miss_rate: float, tolerate: int) -> int | None:
    """The positives missing at the boundary a check tolerating `tolerate` is tested at: the fewest that leave recall
    under the target once `tolerate` are met. None when no check can tolerate that many: the boundary lies beyond
    the unlabeled images, or even labeling all of them would count `tolerate` or fewer too often."""
    at_target = missing_at_target(found + tolerate, target) + tolerate
    if at_target > unlabeled or _lower_tail(tolerate, unlabeled, at_target, unlabeled, miss_rate) > alpha:
        return None
    return at_target


def tolerance_for_misses(
    found: int, unlabeled: int, target: float, confidence: float, miss_rate: float, expected_misses: float,
    fail_share: float = 0.1, most: int = 60,
) -> int:  # fmt: skip
    """The tolerance that sizes a check from the positives it expects to meet (issue 62: "the first check sized from
    the expected misses so that it rarely fails"): the least `tolerate` up to `most` whose check (check_size) would
    count more than `tolerate` positives with probability at most `fail_share` were `expected_misses` positives
    hiding among the `unlabeled` images, each sampled one counted with probability 1 - `miss_rate`. `most` when none
    does (the frame hides so many that no affordable check certifies: the review is not done). The choice reads
    only what was labeled before the draw, so every tolerance keeps the claim's level; it moves the cost only: a
    tolerance too small fails and a re-check follows at a tenth of alpha, one too large samples more than needed."""
    _check(found, unlabeled, 0, 0, confidence, miss_rate)
    if not (isinstance(expected_misses, int | float) and math.isfinite(expected_misses) and expected_misses >= 0):
        raise ValueError(f"expected_misses must be a finite number, 0 or more, not {expected_misses!r}.")
    hiding = min(unlabeled, math.ceil(expected_misses))
    for tolerate in range(most + 1):
        if tolerate and _boundary(found, unlabeled, target, 1 - confidence, miss_rate, tolerate) is None:
            return tolerate - 1  # no check tolerates this many (check_size would size it for fewer)
        size = check_size(found, unlabeled, target, confidence, miss_rate, tolerate)
        if not size or 1.0 - _lower_tail(tolerate, unlabeled, hiding, size, miss_rate) <= fail_share:
            return tolerate
    return most


def hiding_estimate(
    positives: int, looked_at: int, unlabeled: int, miss_rate: float, decided_early: bool, confirmed_since: int
) -> float:
    """The positives a failed check says its frames still hide now: `positives` counted among the `looked_at` of
    `unlabeled` pairs it was drawn from, each counted with probability 1 - `miss_rate`, less the `confirmed_since`
    positives the team has confirmed there since it was drawn. A check decided early stopped at the positive one
    too many (inverse sampling), so its share is read as (positives - 1) / (looked_at - 1), the unbiased estimator of
    a proportion sampled until a given count (Haldane, "On a method of estimating frequencies", Biometrika 33:222,
    1945); a whole sample as positives / looked_at. An estimate for sizing the next check, not a bound: any size
    chosen from the past keeps the next check's level (a fresh random sample tested at its own share of alpha)."""
    _check(0, unlabeled, looked_at, positives, 0.5, miss_rate)
    if not isinstance(decided_early, bool):
        raise ValueError(f"decided_early must be True or False, not {decided_early!r}.")
    _check_counts(confirmed_since=confirmed_since)
    if not looked_at:
        return 0.0
    if decided_early and looked_at > 1 and positives:
        share = (positives - 1) / (looked_at - 1)
    else:
        share = positives / looked_at
    return max(0.0, share * unlabeled / (1.0 - miss_rate) - confirmed_since)


def pair_miss_rate(per_look: float, looks: int, adjudicator: float) -> float:
    """The share of a sample's true positives a check may lose when each gets `looks` fresh, independent looks
    that each miss it with probability at most `per_look`, and the adjudicator who decides every pair a look called
    relevant rejects a true positive with probability at most `adjudicator`: lost when every look misses, or when
    some look finds it and the adjudicator errs, so at most per_look^looks + adjudicator (1 - per_look^looks)."""
    _check_share("per_look", per_look)
    if isinstance(looks, bool) or not isinstance(looks, int) or looks < 1:
        raise ValueError(f"looks must be a whole number, 1 or more, not {looks!r}.")
    if isinstance(adjudicator, bool) or not isinstance(adjudicator, int | float) or not 0 <= adjudicator < 1:
        raise ValueError(f"adjudicator must be a share from 0 up to 1, not {adjudicator!r}.")
    missed = per_look**looks
    return missed + adjudicator * (1.0 - missed)


def per_look_upper_bound(misses: int, looks: int, confidence: float) -> float:
    """The one-sided Clopper-Pearson upper confidence bound of a per-look miss rate from `misses` among `looks`
    (each a blind look at a positive another look found): the `confidence` quantile of Beta(misses + 1, looks -
    misses), 1 where no look was counted (Clopper and Pearson, Biometrika 26:404, 1934)."""
    _check_counts(misses=misses, looks=looks)
    if misses > looks:
        raise ValueError(f"{misses} misses cannot come from {looks} looks.")
    _check_share("confidence", confidence)
    if misses == looks:
        return 1.0
    return float(beta.ppf(confidence, misses + 1, looks - misses))


def tested_at(confidence: float, ordinal: int) -> float:
    """The confidence a query's `ordinal`-th check is tested at. The first spends most of alpha (nine tenths: a
    team checks when the ranking looks dry, and most claims are made there); the k-th after it spends a tenth of
    alpha over 2^(k-1). The shares sum to alpha (0.9 + 0.1 (1/2 + 1/4 + ...)), so over any number of checks the
    chance that a certified claim is wrong stays under alpha (Bonferroni over an unbounded sequence of tests)."""
    _check_share("confidence", confidence)
    alpha = 1.0 - confidence
    spent = alpha * FIRST_SHARE if ordinal <= 1 else alpha * (1 - FIRST_SHARE) / float(2 ** (ordinal - 1))
    return 1.0 - spent


FIRST_SHARE = 0.9


def recall_interval(
    found: int, unlabeled: int, sample: int, positives: int, confidence: float, miss_rate: float = 0.0
) -> tuple[float, float]:
    """A two-sided interval at `confidence` of recall after a check, (found + positives) / (found + K): one
    query's figure from its share of a benchmark check's sample (reported, not certified)."""
    _check(found, unlabeled, sample, positives, confidence, miss_rate)
    _, low, high = missing_interval(unlabeled, sample, positives, confidence, miss_rate)
    after = found + positives
    worst, best = after + high, after + low
    return (after / worst if worst else 1.0, after / best if best else 1.0)
