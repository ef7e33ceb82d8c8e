"""The stopping estimate: Quant-style expected positives left, calibrated out of fold."""

import numpy as np
import pytest

from annotator.progress import stopping


def test_no_estimate_until_both_kinds_of_label():
    assert stopping.estimate_recall([0.9, 0.8], [True, True], [0.1]) is None
    assert stopping.estimate_recall([0.2, 0.1], [False, False], [0.1]) is None
    assert stopping.estimate_recall([], [], [0.1]) is None


def test_expected_positives_left_are_the_calibrated_probabilities_summed():
    # Labeled: relevant above 0.6, not relevant below. Unlabeled images scoring like the relevant ones
    # count nearly one each; those scoring like the not relevant ones nearly nothing.
    labeled = [0.9, 0.85, 0.8, 0.7, 0.3, 0.25, 0.2, 0.1]
    truth = [True, True, True, True, False, False, False, False]
    nothing_left = stopping.estimate_recall(labeled, truth, [0.05, 0.1, 0.15])
    assert nothing_left.found == 4 and nothing_left.expected_left < 0.05 and nothing_left.recall > 0.98
    four_left = stopping.estimate_recall(labeled, truth, [0.9, 0.88, 0.86, 0.84, 0.1])
    assert four_left.expected_left == pytest.approx(4, abs=0.05)
    assert four_left.recall == pytest.approx(0.5, abs=0.01) and four_left.percent in (49, 50)


def test_the_labeled_images_are_scored_by_the_model_fitted_on_the_other_half():
    calls = []

    def score(image_ids, relevant, not_relevant, exclude=None):
        calls.append((image_ids, set(relevant), set(not_relevant), exclude))
        if exclude is not None:
            return np.array([0.0, 0.0])
        return np.array([0.9 if image in {1, 2, 3, 4} else 0.1 for image in image_ids])

    result = stopping.cross_fitted(score, [1, 2, 3, 4], [5, 6, 7, 8])
    held = [(set(ids), relevant | not_relevant) for ids, relevant, not_relevant, exclude in calls if exclude is None]
    assert len(held) == 2
    for scored, fitted_on in held:
        assert not scored & fitted_on  # never scored by a model that saw its label
    assert {frozenset(scored) for scored, _ in held} == {frozenset(fitted) for _, fitted in held}
    assert all(sorted(exclude) == list(range(1, 9)) for *_, exclude in calls if exclude is not None)
    assert result.found == 4 and result.recall > 0.95
    assert stopping.cross_fitted(score, [1], [5, 6]) is None  # a half would have no relevant label


def brute_force_tsr(values):
    k = len(values)
    return sum(sum(v == "not_relevant" for v in values[i:]) / (k - i) for i in range(k)) / k


@pytest.mark.parametrize(
    "values",
    [
        ["relevant"] * 3 + ["not_relevant"] * 7,
        ["not_relevant", "relevant", "unsure", "not_relevant", "not_relevant"],
        ["relevant"],
        ["not_relevant"] * 4,
    ],
)
def test_tail_negativeness_is_rmirs_formula(values):
    assert stopping.tail_negativeness(values) == pytest.approx(brute_force_tsr(values))


def test_tsr_and_the_run_read_the_labels_in_rank_order():
    assert stopping.tail_negativeness([]) is None
    assert stopping.tail_negativeness(["not_relevant"] * 5) == 1.0
    assert stopping.tail_negativeness(["relevant"] * 5) == 0.0
    # Negatives at the bottom score higher than the same negatives at the top.
    assert stopping.tail_negativeness(["relevant", "not_relevant"]) > stopping.tail_negativeness(
        ["not_relevant", "relevant"]
    )
    assert stopping.trailing_not_relevant(["relevant", "not_relevant", "unsure", "not_relevant", "not_relevant"]) == 2
