"""Ranking strategies: from a query's text vector, example images and the labels given so far, the
vector (or the fused ranking) the collection is ranked by.

Pure functions over numpy arrays (no Django, no FAISS): vectors are rows of unit length, float32.
Each strategy that ends in one vector keeps search as one inner-product query over the existing
index, so it stays as fast at 5M images as a text search.

  text       the text vector itself (INQUIRE's ranking; the control)
  feedback   SeeSaw's query-vector optimisation: a class-balanced logistic regression on the labeled
             images, regularised toward the text vector
  rocchio    Rocchio's classic update: the text vector moved toward positives, away from negatives
  image      the mean of example images' vectors ("more like this")
  fusion     text and example images together: the mean of the two similarities (ILIAS)
  alpha_qe   alpha query expansion over the top results (ILIAS), off by default
  rrf        reciprocal rank fusion of several rankings (VisRet)
"""

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt
from threadpoolctl import threadpool_limits


def unit_vector(vector: np.ndarray) -> np.ndarray:
    """`vector` scaled to length 1 (float64); ValueError for a zero or non-finite vector."""
    vector = np.asarray(vector, dtype=np.float64).reshape(-1)
    norm = np.linalg.norm(vector)
    if not np.isfinite(norm) or norm == 0:
        raise ValueError("a query vector must be finite and not all zeros")
    return vector / norm


def as_rows(vectors: npt.ArrayLike, dim: int, dtype: npt.DTypeLike = np.float64) -> np.ndarray:
    """`vectors` as a (n, dim) array of `dtype`; an empty one has shape (0, dim)."""
    array = np.asarray(vectors, dtype=dtype)
    return array.reshape(-1, dim) if array.size else np.empty((0, dim), dtype=dtype)


# How strongly the fitted vector is held to the text: with CLIP-scale inner products (|x.w| well under
# 1) a weak pull lets a handful of labels swing the vector to the bare positive-minus-negative
# direction, which ranks the rest of the collection badly; 10 kept it between the two on the test world.
FEEDBACK_REG_LAMBDA = 10.0
# The positives weigh n_neg / (n_pos + PRIOR_POSITIVES) each: as a full class (SeeSaw's balance) once
# there are many, but a few relevant labels, perhaps mistaken, cannot outweigh hundreds of negatives.
# With SeeSaw's n_neg / n_pos, two wrong "relevant" answers among 300 negatives swung the vector to a
# random part of the collection (a 20-positive query then took 9.7 times the text order's labels); 5 and 10
# both fixed it, 5 costing least on the hard queries (bench/RESULTS.md, issue 23).
PRIOR_POSITIVES = 5.0


def seesaw_objective(
    q: np.ndarray, positives: np.ndarray, negatives: np.ndarray, reg_lambda: float
) -> Callable[[np.ndarray], tuple[float, np.ndarray]]:
    """SeeSaw's loss and its gradient as one function of w (see feedback_vector)."""
    # float32 for the labeled vectors: each evaluation is two matrix-vector products over them, and at
    # 2,000 x 1,024 float64 doubles their time (measured 4.4 ms against 1.2 ms) for no change in rank.
    x = np.concatenate([positives, negatives]).astype(np.float32)
    x -= x.mean(axis=0)
    y = np.concatenate([np.ones(len(positives)), np.zeros(len(negatives))])
    n = len(y)
    weights = np.where(y == 1, max(len(negatives), 1) / max(len(positives) + PRIOR_POSITIVES, 1), 1.0)
    strength = reg_lambda / n

    def loss_and_gradient(w: np.ndarray) -> tuple[float, np.ndarray]:
        logits = (x @ w.astype(np.float32)).astype(np.float64)
        loss_terms = np.logaddexp(0, logits) - y * logits  # BCE with logits, without overflow
        probabilities = 0.5 * (1 + np.tanh(logits / 2))  # the sigmoid, likewise
        norm = max(float(np.linalg.norm(w)), 1e-12)
        direction = w / norm
        difference = direction - q
        penalty = (norm - 1) ** 2 + difference @ difference
        penalty_gradient = 2 * (norm - 1) * direction + 2 * (difference - direction * (direction @ difference)) / norm
        loss = float(np.mean(weights * loss_terms) + strength * penalty)
        data_gradient = (x.T @ (weights * (probabilities - y) / n).astype(np.float32)).astype(np.float64)
        return loss, data_gradient + strength * penalty_gradient

    return loss_and_gradient


def feedback_vector(
    text: np.ndarray,
    positives: npt.ArrayLike,
    negatives: npt.ArrayLike,
    *,
    reg_lambda: float = FEEDBACK_REG_LAMBDA,
    max_iter: int = 500,
) -> np.ndarray:
    """SeeSaw's query vector from labels (Moll et al. 2022, "SeeSaw: interactive ad-hoc search over image
    databases", section 4; their code: seesaw/logistic_regression.py).

    Minimises over w, on the labeled vectors x_i centred on their mean and labels y_i in {0, 1}:

        mean_i  c_i * BCE(y_i, sigmoid(w . x_i))  +  (reg_lambda / n) * [ (|w| - 1)^2 + |w/|w| - q|^2 ]

    with class weights c_i making positives weigh n_neg / (n_pos + PRIOR_POSITIVES) each (SeeSaw's
    class balance, shrunk while there are few of them: robust to a mistaken "relevant")
    and q the unit text vector: a few labels move the ranking, and cannot throw the query away. With
    no positive yet the same loss pushes w away from the negatives. Returns w as a unit vector.

    scikit-learn's LogisticRegression is not used because its penalty pulls toward zero, not toward a
    prior vector, and it takes no fixed offset that could stand in for one.
    """
    q = unit_vector(text)
    dim = q.shape[0]
    # float32 throughout: 2,000 labeled 1,024-d vectors are 8 MB, and copying them to float64 and back
    # cost more than the fit itself.
    positive_rows, negative_rows = as_rows(positives, dim, np.float32), as_rows(negatives, dim, np.float32)
    if not len(positive_rows) and not len(negative_rows):
        return q
    return unit_vector(fit_seesaw(q, positive_rows, negative_rows, reg_lambda, max_iter))


def fit_seesaw(
    q: np.ndarray, positives: np.ndarray, negatives: np.ndarray, reg_lambda: float, max_iter: int = 500
) -> np.ndarray:
    """The minimiser of seesaw_objective, not normalised (L-BFGS from the text vector).

    One BLAS thread: each step is two matrix-vector products of a few megabytes, where waking a second
    thread costs more than it saves (measured at 2,000 x 1,024 on 2 cores: 28 ms against 75 ms a fit)."""
    from scipy.optimize import minimize  # here, so that importing the registry (the facade does) stays cheap

    with threadpool_limits(limits=1, user_api="blas"):
        fitted = minimize(
            seesaw_objective(q, positives, negatives, reg_lambda),
            q.copy(),
            jac=True,
            method="L-BFGS-B",
            options={"maxiter": max_iter, "gtol": 1e-6, "ftol": 1e-12},
        )
    solution: np.ndarray = fitted.x
    return solution


def rocchio_vector(
    text: np.ndarray,
    positives: npt.ArrayLike,
    negatives: npt.ArrayLike,
    *,
    alpha: float = 1.0,
    beta: float = 0.75,
    gamma: float = 0.15,
) -> np.ndarray:
    """Rocchio's relevance feedback (Rocchio 1971; the weights are the textbook ones, Manning et al.,
    "Introduction to Information Retrieval", 9.1.1): alpha q + beta mean(positives) - gamma mean(negatives)."""
    q = unit_vector(text)
    positive_rows, negative_rows = as_rows(positives, q.shape[0]), as_rows(negatives, q.shape[0])
    vector = alpha * q
    if len(positive_rows):
        vector = vector + beta * positive_rows.mean(axis=0)
    if len(negative_rows):
        vector = vector - gamma * negative_rows.mean(axis=0)
    return unit_vector(vector)


def image_vector(examples: npt.ArrayLike) -> np.ndarray:
    """ "More like this": the mean of the example images' vectors (one example: that image's vector)."""
    rows = np.asarray(examples, dtype=np.float64)
    if rows.ndim != 2 or not len(rows):
        raise ValueError("an image ranking needs at least one example image")
    return unit_vector(rows.mean(axis=0))


def fusion_vector(text: np.ndarray, examples: npt.ArrayLike) -> np.ndarray:
    """Text and example images together, as ILIAS fuses them (Kordopatis-Zilos et al. 2025, "ILIAS:
    Instance-Level Image retrieval At Scale"): the mean of the text-to-image similarity and the mean
    image-to-image similarity, score(x) = (x.q + mean_j x.e_j) / 2 = x . (q + mean_j e_j) / 2. Being
    linear, that is one inner-product query with the vector (q + mean e) / 2, returned unnormalised so
    that its inner products are exactly those fused scores."""
    q = unit_vector(text)
    rows = as_rows(examples, q.shape[0])
    if not len(rows):
        raise ValueError("a fused ranking needs at least one example image")
    fused: np.ndarray = (q + rows.mean(axis=0)) / 2
    return fused


def alpha_qe_vector(query: np.ndarray, top: npt.ArrayLike, *, alpha: float = 1.0) -> np.ndarray:
    """Alpha query expansion (Radenovic et al. 2019, as ILIAS uses it): q' = normalise(q + sum over the
    top n results x_i of max(q.x_i, 0)^alpha x_i). ILIAS found alpha 1 with n = 1 helps and n = 5 hurts."""
    q = unit_vector(query)
    rows = as_rows(top, q.shape[0])
    similarities = np.clip(rows @ q, 0, None) ** alpha
    return unit_vector(q + similarities @ rows)


def reciprocal_rank_fusion(rankings: Iterable[Iterable[int]], *, k: float = 1.0) -> list[tuple[int, float]]:
    """Fuse rankings (lists of ids, best first) by RRF (Cormack et al. 2009; k = 1 as VisRet uses it):
    score(d) = sum over the rankings holding d of 1 / (k + rank of d), ranks from 1. Returns (id, score)
    best first; ties by id."""
    scores: dict[int, float] = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            scores[int(item)] = scores.get(int(item), 0.0) + 1.0 / (k + rank)
    return sorted(scores.items(), key=lambda pair: (-pair[1], pair[0]))


# --- the registry: one entry per strategy, read by the engine, the facade, the labeling page's menu,
# the candidates API's validation and the simulator (so a new strategy is added in one place) -------------


def _no_best_match(vector: np.ndarray) -> np.ndarray:
    raise ValueError("alpha_qe expands the text by its best match: pass the collection's vectors")


@dataclass(frozen=True)
class RankingInputs:
    """What a strategy may rank from, all as unit rows of one dimension: the query text's vector (None when
    the strategy needs none), the relevant and not relevant labeled images, the example images, and a way
    to find the collection's best match of a vector (for alpha_qe; returns its rows)."""

    text: np.ndarray | None
    relevant: np.ndarray
    not_relevant: np.ndarray
    examples: np.ndarray
    best_match: Callable[[np.ndarray], np.ndarray] = field(default=_no_best_match)


@dataclass(frozen=True)
class Strategy:
    """A ranking strategy: its name (in URLs, the API and stored choices), what it is in the annotator's
    words, what it needs, and the function from its inputs to the vector the collection is ranked by."""

    name: str
    description: str
    needs_text: bool
    needs_examples: bool
    learns_from_labels: bool
    vector: Callable[[RankingInputs], np.ndarray]

    def vector_for(self, inputs: RankingInputs) -> np.ndarray:
        """The ranking vector; ValueError (a sentence) when an input it needs is missing."""
        if self.needs_text and inputs.text is None:
            raise ValueError(f"The {self.name} ranking starts from the query text, which is empty.")
        if self.needs_examples and not len(inputs.examples):
            raise ValueError(f"The {self.name} ranking needs example images: give image ids or upload one.")
        return self.vector(inputs)


def _text(inputs: RankingInputs) -> np.ndarray:
    assert inputs.text is not None  # vector_for checked it
    return inputs.text


REGISTRY: dict[str, Strategy] = {
    strategy.name: strategy
    for strategy in (
        Strategy("text", "the query text", True, False, False, lambda i: unit_vector(_text(i))),
        Strategy(
            "feedback",
            "learn from my labels",
            True,
            False,
            True,
            lambda i: feedback_vector(_text(i), i.relevant, i.not_relevant),
        ),
        Strategy(
            "rocchio",
            "the text moved toward my labels (Rocchio)",
            True,
            False,
            True,
            lambda i: rocchio_vector(_text(i), i.relevant, i.not_relevant),
        ),
        Strategy("image", "like the example images", False, True, False, lambda i: image_vector(i.examples)),
        Strategy("fusion", "text + example images", True, True, False, lambda i: fusion_vector(_text(i), i.examples)),
        Strategy(
            "alpha_qe",
            "the text expanded by its best match",
            True,
            False,
            False,
            lambda i: alpha_qe_vector(_text(i), i.best_match(unit_vector(_text(i)))),
        ),
    )
}
STRATEGIES = tuple(REGISTRY)
# The strategies an oracle replay can run: it only labels, it never gives example images.
LABEL_ONLY_STRATEGIES = tuple(name for name, strategy in REGISTRY.items() if not strategy.needs_examples)


def strategy(name: str) -> Strategy:
    """The registered strategy `name`; ValueError naming the choices for any other."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise ValueError(f"The ranking strategy is one of {', '.join(STRATEGIES)}, not {name!r}.") from None
