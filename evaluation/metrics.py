"""Retrieval metrics of the INQUIRE benchmark and related papers. Pure numpy; no Django.

Every function takes `relevance`: the run's ranked list for one query, best first,
as 0/1 values (1 = relevant), already ordered (see `rank`), and `R`: how many
relevant images the ground truth has for the query (positives missing from the
run count too). Below, rel(i) is the relevance at rank i (1-based) and
r = sum of rel(i) for i <= k.

  AP@k      = sum_{i<=k} P@i * rel(i) / NF, where NF is
                "min"  min(k, R)   INQUIRE full-rank (default), and ILIAS's mAP@1k: moving a
                                   relevant image up into the top k never lowers it
                "r"    r           INQUIRE rerank: plain AP over a fixed candidate list
                "R"    R           recall-weighted AP: positives beyond k count as missed
                                   (no paper's table uses it; ILIAS divides by min(k, R) too)
              (0 when NF is 0)
  nDCG@k    = DCG@k / IDCG@k, DCG@k = sum_{i<=k} rel(i) / log2(i + 1), IDCG@k the DCG of
              min(k, R) relevant images at the top (0 when R is 0)

Tied scores (`ties`, for AP and nDCG; the other metrics only count the top k):
  "average"    INQUIRE's numbers (src/metrics.py calls scikit-learn): a block of tied scores is
               one threshold. AP takes the precision at the end of the block for every positive
               in it (sklearn.metrics.average_precision_score, scaled by r / NF as INQUIRE's
               ap_at_k does); nDCG gives each position of the block the block's mean gain
               (sklearn.metrics.ndcg_score's tie averaging, McSherry and Najork 2008).
  "run-order"  the run's own order (ties in file order), as if every score were distinct.
The top k itself, MRR, P@k, recall@k and hit@k follow the run's order: where tied scores straddle
a cut, the entries given first are inside it. INQUIRE leaves that order to numpy's argsort, which
does not define it; the run's order is at least reproducible.
  MRR@k     = 1 / (rank of the first relevant image within the top k), 0 if none
  P@k       = r / k
  recall@k  = r / R (the fraction of all positives found; RMIR's recall)
  hit@k     = 1 if r > 0 (VisRet's "Recall@k")
  oracle@k  = the best AP@k (NF = min(k, R)) a perfect reranking of the top k could reach:
              r / min(k, R)
"""

from collections.abc import Callable, Iterable
from typing import Any

import numpy as np
import numpy.typing as npt

# What the functions take: relevance or scores as any 1-D sequence of numbers (a list, a numpy array).
Values = npt.ArrayLike

NORMALISERS = ("min", "r", "R")
TIES = ("average", "run-order")


def rank(scores: Values) -> np.ndarray:
    """Positions sorted by score, best first. Ties keep the run's own order (the order the
    entries were given in): a stable sort, so the same run always scores the same."""
    scores = np.asarray(scores, dtype=np.float64)
    return np.argsort(-scores, kind="stable")


def _top(relevance: Values, k: int) -> np.ndarray:
    if k < 1:
        raise ValueError("k must be at least 1")
    return (np.asarray(relevance, dtype=np.float64)[:k] > 0).astype(np.float64)


def _block_ends(scores: Values | None, n: int) -> np.ndarray | None:
    """Last position of each block of equal consecutive scores among the first n (None: no scores
    given, every position its own block). Runs come sorted by score, so equal scores are adjacent."""
    if scores is None:
        return None
    scores = np.asarray(scores, dtype=np.float64)[:n]
    if len(scores) != n:
        raise ValueError(f"{n} relevance values but {len(scores)} scores")
    return np.append(np.flatnonzero(scores[1:] != scores[:-1]), n - 1) if n else np.empty(0, dtype=np.int64)


def average_precision(
    relevance: Values, R: int, k: int, normaliser: str = "min", scores: Values | None = None
) -> float:
    """AP@k; with `scores`, tied scores are averaged as scikit-learn does (see the module's notes)."""
    if normaliser not in NORMALISERS:
        raise ValueError(f"the AP normaliser is one of {', '.join(NORMALISERS)}, not {normaliser!r}")
    rel = _top(relevance, k)
    hits = np.cumsum(rel)
    nf = {"min": min(k, R), "r": hits[-1] if len(hits) else 0, "R": R}[normaliser]
    if nf <= 0:
        return 0.0
    ends = _block_ends(scores, len(rel))
    if ends is None:
        return float(np.sum(hits / np.arange(1, len(rel) + 1) * rel) / nf)
    # Each block is one threshold: its positives all get the precision at the block's end.
    gained = np.diff(hits[ends], prepend=0.0)
    return float(np.sum(gained * hits[ends] / (ends + 1)) / nf)


def ndcg(relevance: Values, R: int, k: int, scores: Values | None = None) -> float:
    """nDCG@k; with `scores`, each block of tied scores shares its mean gain (scikit-learn's ndcg_score)."""
    rel = _top(relevance, k)
    discounts = 1.0 / np.log2(np.arange(2, k + 2))
    ideal = float(np.sum(discounts[: min(k, R)]))
    if ideal <= 0:
        return 0.0
    ends = _block_ends(scores, len(rel))
    if ends is None:
        return float(np.sum(rel * discounts[: len(rel)]) / ideal)
    starts = np.concatenate([[0], ends[:-1] + 1]).astype(np.int64)
    gains = np.add.reduceat(rel, starts) / (ends - starts + 1) if len(rel) else rel
    position_discounts = np.add.reduceat(discounts[: len(rel)], starts) if len(rel) else rel
    return float(np.sum(gains * position_discounts) / ideal)


def reciprocal_rank(relevance: Values, k: int) -> float:
    found = np.flatnonzero(_top(relevance, k))
    return 1.0 / float(found[0] + 1) if len(found) else 0.0


def precision(relevance: Values, k: int) -> float:
    return float(_top(relevance, k).sum() / k)


def recall(relevance: Values, R: int, k: int) -> float:
    return float(_top(relevance, k).sum() / R) if R > 0 else 0.0


def hit(relevance: Values, k: int) -> float:
    return float(_top(relevance, k).sum() > 0)


def oracle_average_precision(relevance: Values, R: int, k: int) -> float:
    nf = min(k, R)
    return float(_top(relevance, k).sum() / nf) if nf > 0 else 0.0


# name -> f(relevance, R, k, normaliser, scores)
METRICS: dict[str, Callable[[Values, int, int, str, Values | None], float]] = {
    "ap": lambda rel, R, k, nf, s: average_precision(rel, R, k, nf, s),
    "ndcg": lambda rel, R, k, nf, s: ndcg(rel, R, k, s),
    "mrr": lambda rel, R, k, nf, s: reciprocal_rank(rel, k),
    "precision": lambda rel, R, k, nf, s: precision(rel, k),
    "recall": lambda rel, R, k, nf, s: recall(rel, R, k),
    "hit": lambda rel, R, k, nf, s: hit(rel, k),
    "oracle_ap": lambda rel, R, k, nf, s: oracle_average_precision(rel, R, k),
}
PERCENT_METRICS = {"ap", "ndcg", "oracle_ap"}  # reported x100, as the papers do


def score_query(
    relevance: Values,
    R: int,
    k: int,
    metrics: Iterable[str] = tuple(METRICS),
    normaliser: str = "min",
    *,
    scores: Values | None = None,
    ties: str = "average",
) -> dict[str, float]:
    """The metrics of one query. `scores` (the run's scores of `relevance`, best first) are needed for
    ties="average"; without them every position is its own threshold."""
    unknown = [name for name in metrics if name not in METRICS]
    if unknown:
        raise ValueError(f"unknown metrics {', '.join(unknown)}; known: {', '.join(METRICS)}")
    if ties not in TIES:
        raise ValueError(f"ties are {' or '.join(TIES)}, not {ties!r}")
    scores = scores if ties == "average" else None
    return {name: METRICS[name](relevance, R, k, normaliser, scores) for name in metrics}


def mean_with_uncertainty(values: Values, *, resamples: int = 1000, seed: int = 0) -> dict[str, Any]:
    """Mean, standard error and a bootstrap 95% interval (queries resampled with replacement)."""
    values = np.asarray(values, dtype=np.float64)
    if len(values) == 0:
        return {"mean": 0.0, "se": 0.0, "ci95": [0.0, 0.0]}
    se = float(values.std(ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
    rng = np.random.default_rng(seed)
    means = values[rng.integers(0, len(values), size=(resamples, len(values)))].mean(axis=1)
    return {
        "mean": float(values.mean()),
        "se": se,
        "ci95": [float(np.percentile(means, 2.5)), float(np.percentile(means, 97.5))],
    }


def paired_permutation_test(a: Values, b: Values, *, resamples: int = 10000, seed: int = 0) -> float:
    """Two-sided p-value that runs A and B score alike, flipping the sign of per-query differences."""
    differences = np.asarray(a, dtype=np.float64) - np.asarray(b, dtype=np.float64)
    if len(differences) == 0 or not np.any(differences):
        return 1.0
    observed = abs(differences.mean())
    rng = np.random.default_rng(seed)
    signs = rng.choice([-1.0, 1.0], size=(resamples, len(differences)))
    extreme = np.sum(np.abs((signs * differences).mean(axis=1)) >= observed - 1e-12)
    return float((extreme + 1) / (resamples + 1))
