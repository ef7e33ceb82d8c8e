"""The completeness claim's statistics (annotator/progress/certify.py) against exact enumeration: on small
frames every sample a check can draw is weighed with math.comb, so the guarantee itself is checked (a claim
that recall >= T at confidence 1 - alpha is wrong in at most alpha of draws, whatever the truth), not a
formula restated."""

import math

import pytest

from annotator.progress import certify


def pmf(met: int, unlabeled: int, missing: int, sample: int) -> float:
    """P(a simple random sample of `sample` meets `met` of the `missing` positives among `unlabeled`)."""
    return math.comb(missing, met) * math.comb(unlabeled - missing, sample - met) / math.comb(unlabeled, sample)


def tail(met: int, unlabeled: int, missing: int, sample: int) -> float:
    return sum(pmf(m, unlabeled, missing, sample) for m in range(0, met + 1))


@pytest.mark.parametrize(("unlabeled", "sample"), [(20, 5), (30, 12), (25, 25), (12, 1)])
def test_the_upper_bound_is_the_exact_inversion_of_the_hypergeometric_tail(unlabeled, sample):
    for met in range(0, sample + 1):
        for confidence in (0.8, 0.9, 0.95):
            feasible = [k for k in range(met, unlabeled - (sample - met) + 1)]
            want = max(k for k in feasible if tail(met, unlabeled, k, sample) > 1 - confidence)
            assert certify.missing_upper_bound(unlabeled, sample, met, confidence) == want, (met, confidence)


@pytest.mark.parametrize(("found", "unlabeled", "sample"), [(4, 20, 6), (10, 30, 10), (2, 16, 8), (0, 15, 12)])
@pytest.mark.parametrize("target", [0.5, 0.8, 0.9])
def test_a_certified_claim_is_wrong_in_at_most_alpha_of_draws_whatever_the_truth(found, unlabeled, sample, target):
    """For every true number of missing positives, the chance (over the draw) of certifying a recall that is in
    truth below the target, and of stating a lower bound above the true recall, is at most alpha."""
    confidence = 0.9
    for missing in range(0, unlabeled + 1):
        wrong_claim = wrong_bound = 0.0
        for met in range(max(0, sample - (unlabeled - missing)), min(sample, missing) + 1):
            said = certify.claim(found, unlabeled, sample, met, target, confidence)
            true_recall = (found + met) / (found + missing) if found + missing else 1.0
            chance = pmf(met, unlabeled, missing, sample)
            if said.certified and true_recall < target:
                wrong_claim += chance
            if said.recall_lower_bound > true_recall + 1e-12:
                wrong_bound += chance
            assert said.certified == (said.recall_lower_bound >= target), (missing, met)  # one answer, two forms
        assert wrong_claim <= 1 - confidence + 1e-12, (missing, wrong_claim)
        assert wrong_bound <= 1 - confidence + 1e-12, (missing, wrong_bound)


def test_the_interval_of_what_is_missing_covers_the_truth_as_often_as_it_says():
    unlabeled, sample, confidence = 24, 8, 0.8
    for missing in range(0, unlabeled + 1):
        covered = 0.0
        for met in range(max(0, sample - (unlabeled - missing)), min(sample, missing) + 1):
            point, low, high = certify.missing_interval(unlabeled, sample, met, confidence)
            assert low <= point <= high or point == 0 == low
            if low <= missing - met <= high:
                covered += pmf(met, unlabeled, missing, sample)
        assert covered >= confidence - 1e-12, (missing, covered)


def test_what_a_check_costs_is_the_least_sample_that_certifies_when_it_meets_no_positive():
    for found, unlabeled, target in [(10, 40, 0.8), (3, 25, 0.6), (100, 5000, 0.9), (1, 30, 0.5)]:
        size = certify.check_size(found, unlabeled, target, 0.95)
        assert certify.claim(found, unlabeled, size, 0, target, 0.95).certified
        if size:
            assert not certify.claim(found, unlabeled, size - 1, 0, target, 0.95).certified
    # A 5,000-image frame with 100 positives labeled: about a fifth of it for 90% at 95%.
    assert 900 <= certify.check_size(100, 5000, 0.9, 0.95) <= 1500
    # Nothing can hide enough positives to matter: no check needed.
    assert certify.check_size(100, 5, 0.9, 0.95) == 0


def test_positives_met_in_the_check_count_as_found_and_lower_the_bound():
    clean = certify.claim(50, 2000, 1000, 0, 0.9, 0.95)
    dirty = certify.claim(50, 2000, 1000, 3, 0.9, 0.95)
    assert clean.certified and not dirty.certified and clean.recall_lower_bound > dirty.recall_lower_bound
    assert dirty.missing[0] == pytest.approx(3 * 2000 / 1000 - 3)
    # Fewer labels: 6 positives could still hide with (1 - 0.3)^6 = 12% chance of meeting none, above 5%.
    assert not certify.claim(50, 2000, 600, 0, 0.9, 0.95).certified


@pytest.mark.parametrize(
    ("arguments", "sentence"),
    [
        ((5, 100, 10, 0, 1.0, 0.95), "target must be a share between 0 and 1"),
        ((5, 100, 10, 0, 0.9, 0.0), "confidence must be a share between 0 and 1"),
        ((5, 100, 10, 0, float("nan"), 0.95), "target must be a share"),
        ((5, 100, 101, 0, 0.9, 0.95), "cannot be larger than the unlabeled images"),
        ((5, 100, 10, 11, 0.9, 0.95), "cannot have met 11 positives"),
        ((-1, 100, 10, 0, 0.9, 0.95), "found must be a whole number"),
        ((5, 2.5, 1, 0, 0.9, 0.95), "unlabeled must be a whole number"),
        ((True, 100, 10, 0, 0.9, 0.95), "found must be a whole number"),
    ],
)
def test_bad_input_is_refused_with_a_sentence(arguments, sentence):
    with pytest.raises(ValueError, match=sentence):
        certify.claim(*arguments)
