"""When to stop labeling a query: an estimate of the share of its positives already found.

INQUIRE's annotators stopped after 100 not-relevant labels in a row. That rule knows nothing of how
many positives are left, and stops early on queries whose positives sit below a crowd of near misses.
Beside it Quire shows a recall estimate in the spirit of the "Quant" rule of technology-assisted
review (Yang, Lewis and Frieder 2021, "Heuristic stopping rules for technology-assisted review",
DocEng '21, section 3.3): the expected number of positives still unlabeled is the sum of the model's
probabilities of relevance over the unlabeled images, so

    estimated recall = found / (found + sum over unlabeled images of p(relevant | score)).

p is a one-feature logistic regression of the labels on the ranking score, fitted on the labeled
images (Platt scaling). The unlabeled images counted are the top `depth` of the same ranking (the
rest are taken to hold no positives: their probabilities are too small to matter, and scoring 5M
images on every page would not be). Pure numpy and scikit-learn, no Django: the labeling page, the
dashboard and the simulator (which measures the estimate's error against the truth) share it.
"""

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

# How deep below the labels the unlabeled images are counted.
DEPTH = 10_000


@dataclass(frozen=True)
class RecallEstimate:
    found: int  # positives labeled so far
    expected_left: float  # expected positives among the unlabeled images counted
    recall: float  # found / (found + expected_left)

    @property
    def percent(self) -> int:
        return int(np.floor(100 * self.recall))


def estimate_recall(
    labeled_scores: npt.ArrayLike, labeled_relevant: npt.ArrayLike, unlabeled_scores: npt.ArrayLike
) -> RecallEstimate | None:
    """The recall estimate from the labeled images' scores and labels (True = relevant) and the
    unlabeled images' scores under the same ranking. None until there is at least one relevant and
    one not-relevant label (there is nothing to calibrate on before)."""
    scores = np.asarray(labeled_scores, dtype=np.float64).reshape(-1, 1)
    relevant = np.asarray(labeled_relevant, dtype=bool)
    found = int(relevant.sum())
    if not found or found == len(relevant) or not np.isfinite(scores).all():
        return None
    # scikit-learn here, not at the top: the labeling views import this module, and scikit-learn's import
    # (2.8 s on a busy 2-core machine) went into every command's start through the URL checks.
    from sklearn.linear_model import LogisticRegression

    # C large: the fit is the plain maximum-likelihood calibration, not shrunk toward p = 1/2.
    model = LogisticRegression(C=1e4, max_iter=1000).fit(scores, relevant)
    unlabeled = np.asarray(unlabeled_scores, dtype=np.float64).reshape(-1, 1)
    expected_left = float(model.predict_proba(unlabeled)[:, 1].sum()) if len(unlabeled) else 0.0
    return RecallEstimate(found, expected_left, found / (found + expected_left))


def cross_fitted(
    score: Callable[..., Any], relevant_ids: Sequence[int], not_relevant_ids: Sequence[int], *, seed: int = 0
) -> RecallEstimate | None:
    """The recall estimate with the labeled images scored out of fold.

    Scoring the labeled images with a model fitted on those same labels flatters it: its positives
    score high because they were learned, the unlabeled ones do not, and the estimate says "done"
    after the first batch (measured on the synthetic world: 95% claimed at 5% true recall). So the
    labels are split in two halves; each half is scored by the feedback model fitted on the other
    (cross-fitting); the unlabeled images are scored by the model fitted on all labels.

    `score(image_ids, relevant_ids, not_relevant_ids, exclude=None)` scores `image_ids` under the
    feedback ranking fitted on the given labels; with `exclude` (the labeled ids) it instead returns
    the scores of the top DEPTH images not in it.
    """
    relevant, not_relevant = list(relevant_ids), list(not_relevant_ids)
    if len(relevant) < 2 or not not_relevant:
        return None
    rng = np.random.default_rng(seed)
    halves: list[tuple[list[int], list[int]]] = [([], []), ([], [])]
    for kind, ids in enumerate((relevant, not_relevant)):
        for position, image_id in enumerate(rng.permutation(ids)):
            halves[position % 2][kind].append(int(image_id))
    scores: list[float] = []
    truths: list[bool] = []
    unlabeled: Any = 0  # the mean of the two half models' scores of the unlabeled images (an array)
    labeled = relevant + not_relevant
    for held, (other_relevant, other_not_relevant) in ((halves[0], halves[1]), (halves[1], halves[0])):
        held_ids = held[0] + held[1]
        if not held_ids or not other_relevant:
            return None
        scores.extend(score(held_ids, other_relevant, other_not_relevant))
        truths.extend([True] * len(held[0]) + [False] * len(held[1]))
        # The unlabeled images are scored by the same half models, so that their scores are on the
        # scale the calibration was fitted on (the model fitted on all labels scores higher).
        unlabeled = unlabeled + np.asarray(score(None, other_relevant, other_not_relevant, exclude=labeled)) / 2
    return estimate_recall(scores, truths, unlabeled)


NOT_RELEVANT = "not_relevant"


def trailing_not_relevant(values_in_rank_order: Sequence[str]) -> int:
    """INQUIRE's run: consecutive not-relevant labels counted up from the deepest labeled rank."""
    run = 0
    for value in reversed(values_in_rank_order):
        if value != NOT_RELEVANT:
            break
        run += 1
    return run


def tail_negativeness(values_in_rank_order: Sequence[str]) -> float | None:
    """RMIR's tail-negativeness score over a ranked list of K labels (the RMIR paper; ../shared/docs/ANCHORS.md):
    TSR = (1/K) * sum over i = 1..K of the share of not-relevant labels among ranks i..K. Near 1 when
    the labels below the head are all negatives (the ranking has run dry); None with no label.
    Computed from the bottom in one pass."""
    values = list(values_in_rank_order)
    if not values:
        return None
    total, negatives = 0.0, 0
    for count, value in enumerate(reversed(values), start=1):
        negatives += value == NOT_RELEVANT
        total += negatives / count
    return total / len(values)
