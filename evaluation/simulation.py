"""Replaying an oracle annotator over ground truth, to measure how fast a ranking strategy finds positives.

The annotator labels the next `batch` candidates the strategy proposes (those with no label yet), each
relevant when the ground truth lists it and not relevant otherwise, then asks again with everything
labeled so far: the loop the labeling page and the candidates API run. A strategy is a function
rank(strategy, relevant_ids, not_relevant_ids, exclude_ids, k) -> image ids, best first; the same
replay drives the synthetic world below (exact numpy ranking) and the real collection
(search.facade.rank).

Reported per query: labels spent to find 50 / 90 / 95% of the positives, recall after 100 / 500 /
1,000 labels, where INQUIRE's rule (stop after 100 not-relevant labels in a row) would have stopped
and the recall it had then, and how far the stopping estimate (annotator/progress/stopping.py) was from the
true recall: its mean absolute error over the batches, and the true recall when it first claimed the
target.
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from functools import partial
from typing import Any

import numpy as np

from annotator.facade import DEPTH, cross_fitted
from search.facade import LABEL_ONLY_STRATEGIES, RECENT_ANSWERS, compose_batch, strategy_vector

from .worlds import World
from .worlds import synthetic_world as synthetic_world  # the worlds replayed here, for the callers

TARGETS = (0.5, 0.9, 0.95)
CHECKPOINTS = (100, 500, 1000)
RUN_RULE = 100


@dataclass
class Replay:
    query_id: int
    strategy: str
    positives: int
    found: list[int] = field(default_factory=list)  # positives found after each label (cumulative)
    # after each batch: (labels spent, estimated recall or None, true recall)
    estimates: list[tuple[int, float | None, float]] = field(default_factory=list)

    def labels_to(self, share: float) -> int | None:
        """Labels spent until `share` of the positives were found; None if never within the budget."""
        wanted = int(np.ceil(share * self.positives))
        hits = np.flatnonzero(np.asarray(self.found) >= wanted)
        return int(hits[0]) + 1 if len(hits) else None

    def recall_after(self, labels: int) -> float:
        if not self.found:
            return 0.0
        return self.found[min(labels, len(self.found)) - 1] / self.positives

    def rule_stop(self) -> tuple[int, float] | None:
        """(labels, recall) where 100 not-relevant labels in a row would have stopped the annotator."""
        run = 0
        for index in range(len(self.found)):
            gained = self.found[index] - (self.found[index - 1] if index else 0)
            run = 0 if gained else run + 1
            if run == RUN_RULE:
                return index + 1, self.found[index] / self.positives
        return None

    def estimate_error(self) -> float | None:
        """Mean absolute difference between the estimated and the true recall, over the batches that had one."""
        errors = [abs(estimate - truth) for _, estimate, truth in self.estimates if estimate is not None]
        return float(np.mean(errors)) if errors else None

    def estimate_stop(self, target: float) -> tuple[int, float] | None:
        """(labels, true recall) when the estimate first said `target` of the positives were found."""
        for labels, estimate, truth in self.estimates:
            if estimate is not None and estimate >= target:
                return labels, truth
        return None

    def summary(self, target: float = 0.95) -> dict[str, Any]:
        stop = self.rule_stop()
        estimate_stop = self.estimate_stop(target)
        error = self.estimate_error()
        return {
            "query_id": self.query_id,
            "strategy": self.strategy,
            "positives": self.positives,
            **{f"labels_to_{round(100 * t)}": self.labels_to(t) for t in TARGETS},
            **{f"recall_at_{n}": round(self.recall_after(n), 4) for n in CHECKPOINTS},
            "rule_stops_at": stop[0] if stop else None,
            "recall_at_rule_stop": round(stop[1], 4) if stop else None,
            "estimate_error": None if error is None else round(error, 4),
            "labels_to_reached": self.labels_to(target) or len(self.found),
            "missed": self.labels_to(target) is None,
            "estimate_stops_at": estimate_stop[0] if estimate_stop else None,
            "recall_at_estimate_stop": round(estimate_stop[1], 4) if estimate_stop else None,
        }


def replay(
    rank: Callable[..., Any],
    query_id: int,
    strategy: str,
    positives: set[int],
    *,
    batch: int = 50,
    target: float = 0.95,
    max_labels: int = 2000,
    estimate: Callable[..., Any] | None = None,
    mistaken: Callable[[int], bool] | None = None,
) -> Replay:
    """Run the oracle annotator until `target` of the positives are found or `max_labels` are spent.
    `estimate(relevant, not_relevant)`, when given, is the recall estimate after each batch (or None).
    `mistaken(image_id)`, when given, says on which images the annotator gives the wrong answer
    (annotator_mistakes): a positive counts as found once it has been labeled, whatever the answer, so
    the figures measure how well the ranking survives the mistakes."""
    result = Replay(query_id, strategy, len(positives))
    relevant: list[int] = []
    not_relevant: list[int] = []
    answers: list[tuple[int, bool]] = []
    found = 0
    while len(result.found) < max_labels and found < target * len(positives):
        proposed = rank(
            strategy,
            relevant,
            not_relevant,
            relevant + not_relevant,
            min(batch, max_labels - len(result.found)),
            recent=answers[-RECENT_ANSWERS:],
        )
        if not proposed:
            break
        for image_id in proposed:
            is_positive = image_id in positives
            found += is_positive
            says_relevant = is_positive != bool(mistaken and mistaken(image_id))
            (relevant if says_relevant else not_relevant).append(image_id)
            answers.append((image_id, says_relevant))
            result.found.append(found)
        if estimate is not None:
            result.estimates.append((len(result.found), estimate(relevant, not_relevant), found / len(positives)))
    return result


class _Exact:
    """The synthetic world as search's batch rules see a collection: exact numpy scores."""

    def __init__(self, vectors: np.ndarray) -> None:
        self.all = vectors

    def top(self, vector: np.ndarray, depth: int, exclude: set[int]) -> list[int]:
        scores = self.all @ np.asarray(vector, dtype=np.float32)
        if exclude:
            scores[list(exclude)] = -np.inf
        depth = min(depth, len(scores) - len(exclude))
        if depth <= 0:
            return []
        top = np.argpartition(-scores, depth - 1)[:depth]
        return [int(i) for i in top[np.lexsort((top, -scores[top]))]]

    def vectors(self, image_ids: Sequence[int]) -> np.ndarray:
        chosen: np.ndarray = self.all[list(image_ids)]
        return chosen


def world_ranker(world: World, query_id: int) -> Callable[..., Any]:
    """rank(...) over the synthetic world: the text order plainly, every other strategy through the
    labeling page's batch rules (search.facade.compose_batch), scored exactly with numpy."""
    collection = _Exact(world.vectors)

    def rank(
        strategy: str,
        relevant: list[int],
        not_relevant: list[int],
        exclude: Iterable[int],
        k: int,
        recent: Sequence[tuple[int, bool]] = (),
    ) -> list[int]:
        if strategy not in LABEL_ONLY_STRATEGIES:
            raise ValueError(f"the synthetic world ranks by {', '.join(LABEL_ONLY_STRATEGIES)}, not {strategy!r}")
        vector = strategy_vector(
            strategy,
            world.texts[query_id],
            world.vectors[relevant],
            world.vectors[not_relevant],
            collection=world.vectors,
        ).astype(np.float32)
        if strategy == "text":
            return collection.top(vector, k, set(exclude))
        picks = compose_batch(
            collection, learned=vector, text=world.texts[query_id].astype(np.float32), k=k, exclude=set(exclude),
            relevant=world.vectors[relevant], not_relevant=world.vectors[not_relevant], recent=recent,
        )  # fmt: skip
        return [pick.image_id for pick in picks]

    return rank


def world_estimator(world: World, query_id: int, depth: int = DEPTH) -> Callable[..., Any]:
    """estimate(relevant, not_relevant) over the synthetic world, computed as the labeling page does
    (annotator.progress.stopping.cross_fitted): exact numpy scores instead of the index."""

    def score(
        image_ids: Sequence[int], relevant: list[int], not_relevant: list[int], exclude: Sequence[int] | None = None
    ) -> np.ndarray:
        vector = strategy_vector(
            "feedback", world.texts[query_id], world.vectors[relevant], world.vectors[not_relevant]
        )
        scores = world.vectors @ vector.astype(np.float32)
        if exclude is None:
            given: np.ndarray = scores[list(image_ids)]
            return given
        scores = np.delete(scores, list(exclude))
        deepest: np.ndarray = scores[np.argpartition(-scores, min(depth, len(scores) - 1))[:depth]]
        return deepest

    def estimate(relevant: list[int], not_relevant: list[int]) -> float | None:
        result = cross_fitted(score, relevant, not_relevant)
        return None if result is None else result.recall

    return estimate


def compare(
    replays: list[Replay], baseline: str = "text", target: float = 0.95, kinds: dict[int, str] | None = None
) -> list[dict[str, Any]]:
    """Per query: labels to `target` for each strategy and its ratio to the baseline's, worst first. A
    strategy that never got there within the budget is a failure: its ratio is the budget's (a lower
    bound, marked `{name}_missed`), not left out."""
    by_query: dict[int, dict[str, Replay]] = {}
    for item in replays:
        by_query.setdefault(item.query_id, {})[item.strategy] = item
    rows = []
    for query_id, items in sorted(by_query.items()):
        base = items[baseline].labels_to(target)
        row: dict[str, Any] = {"query_id": query_id, "kind": (kinds or {}).get(query_id, ""), baseline: base}
        row[f"{baseline}_missed"] = base is None
        base_spent = base or len(items[baseline].found)  # a baseline that never got there: its whole budget
        for name, item in items.items():
            if name != baseline:
                row |= _against_baseline(name, item.labels_to(target), len(item.found), base, base_spent)
        row["worst_ratio"] = max((row[f"{name}_ratio"] or 0 for name in items if name != baseline), default=None)
        rows.append(row)
    return sorted(rows, key=lambda row: -(row["worst_ratio"] or 0))


def _against_baseline(name: str, spent: int | None, budget: int, base: int | None, base_spent: int) -> dict[str, Any]:
    """One strategy's labels to the target beside the baseline's. Both never got there: no ratio. One did: a bound,
    which `{name}_bound` names (">=" when the strategy missed, "<=" when the baseline did); neither: the ratio."""
    both_missed = spent is None and base is None
    ratio = (spent or budget) / base_spent if base_spent and not both_missed else None
    bound = "" if ratio is None else ">=" if spent is None else "<=" if base is None else ""
    return {
        name: spent, f"{name}_missed": spent is None, f"{name}_ratio": None if ratio is None else round(ratio, 3),
        f"{name}_bound": bound,
    }  # fmt: skip


def annotator_mistakes(noise: float, query_id: int, seed: int = 0) -> Callable[[int], bool] | None:
    """Which images an annotator who is wrong a `noise` share of the time answers wrongly on a query: a
    fixed draw per (seed, query, image), so every strategy meets the same annotator. None for no noise."""
    if not noise:
        return None
    if not 0 < noise < 0.5:
        raise ValueError("the annotator's noise is a share above 0 and below 0.5, e.g. 0.05")
    threshold = int(noise * 2**64)

    def mistaken(image_id: int) -> bool:
        return _mix(_mix(seed * 1_000_003 + query_id) ^ int(image_id)) < threshold

    return mistaken


def _mix(value: int) -> int:
    """splitmix64's finaliser (Steele et al. 2014): a well-spread 64-bit hash of an integer, in pure Python."""
    value = (value + 0x9E3779B97F4A7C15) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    value = ((value ^ (value >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    return value ^ (value >> 31)


# --- a whole simulation: every query, every strategy -------------------------------------------------

CURVE_POINTS = 40  # points per recall-against-labels curve


def simulate(
    positives: dict[int, set[int]],
    rankers: dict[int, tuple[Callable[..., Any], Callable[..., Any] | None]],
    strategies: list[str],
    *,
    batch: int = 50,
    target: float = 0.95,
    max_labels: int = 2000,
    progress: Callable[..., Any] | None = None,
    hard: dict[int, bool] | None = None,
    kinds: dict[int, str] | None = None,
    noise: float = 0.0,
    seed: int = 0,
) -> dict[str, Any]:
    """Replay every query (`rankers`: query id -> (rank, estimate or None)) with every strategy, by an
    annotator wrong on a `noise` share of the images (annotator_mistakes, drawn from `seed`). Returns
    what `manage.py simulate_labeling --json` writes: the settings, one summary per query and strategy,
    per-query ratios against the first strategy (worst first), medians and worst ratios per strategy
    (and per hard/easy group when `hard` is given, per kind of query when `kinds` is) and the mean
    recall-against-labels curve per strategy."""
    replays = []
    total = len(rankers) * len(strategies)
    for query_id, (rank, estimate) in sorted(rankers.items()):
        for strategy in strategies:
            replays.append(
                replay(
                    rank,
                    query_id,
                    strategy,
                    positives[query_id],
                    batch=batch,
                    target=target,
                    max_labels=max_labels,
                    estimate=estimate,
                    mistaken=annotator_mistakes(noise, query_id, seed),
                )
            )
            if progress:
                progress(len(replays), total)
    rows = [item.summary(target) for item in replays]
    for row in rows:
        if hard is not None:
            row["hard"] = hard[row["query_id"]]
        if kinds is not None:
            row["kind"] = kinds[row["query_id"]]
    versus = compare(replays, baseline=strategies[0], target=target, kinds=kinds)
    settings = {"strategies": strategies, "batch": batch, "target": target, "max_labels": max_labels, "noise": noise}
    return {
        "settings": settings,
        "queries": rows,
        "versus": versus,
        "medians": _medians(rows, versus, strategies, hard, kinds),
        "curves": {
            strategy: _mean_curve([r for r in replays if r.strategy == strategy], max_labels) for strategy in strategies
        },
    }


def _medians(
    rows: list[dict[str, Any]],
    versus: list[dict[str, Any]],
    strategies: list[str],
    hard: dict[int, bool] | None,
    kinds: dict[int, str] | None,
) -> dict[str, Any]:
    """Per strategy, overall and per group: the median labels to the target over every query (one that
    never got there counts as the labels it spent, the whole budget, and `missed` says how many did),
    the median and the worst ratio to the first strategy, and how many queries were more than 10% worse.
    One figure over the same queries for every strategy: a median over only the queries a strategy
    reached would flatter the one that missed the others."""
    baseline = strategies[0]
    result: dict[str, Any] = {}
    for group, member in _groups(hard, kinds).items():
        result[group] = {}
        for strategy in strategies:
            chosen = [row for row in rows if row["strategy"] == strategy and member(row["query_id"])]
            figures = _labels_figures(chosen)
            if strategy != baseline:
                figures |= _ratio_figures([row[f"{strategy}_ratio"] for row in versus if member(row["query_id"])])
            result[group][strategy] = figures
    return result


def _groups(hard: dict[int, bool] | None, kinds: dict[int, str] | None) -> dict[str, Callable[[int], bool]]:
    """The groups the medians are given for: all, then the kinds of query (hard and easy among them), or else the
    hard and the easy ones."""
    groups: dict[str, Callable[[int], bool]] = {"all": lambda query_id: True}
    if kinds is not None:
        for kind in sorted(set(kinds.values())):
            groups[kind] = partial(_of_kind, kinds, kind)
    elif hard is not None:
        groups |= {"hard": lambda query_id: hard[query_id], "easy": lambda query_id: not hard[query_id]}
    return groups


def _labels_figures(chosen: list[dict[str, Any]]) -> dict[str, Any]:
    spent = [row["labels_to_reached"] for row in chosen]
    return {
        "queries": len(chosen),
        "median_labels": float(np.median(spent)) if spent else None,
        "missed": sum(1 for row in chosen if row["missed"]),
        "median_estimate_error": _median([row["estimate_error"] for row in chosen]),
    }


def _ratio_figures(ratios: list[float | None]) -> dict[str, Any]:
    present = [ratio for ratio in ratios if ratio is not None]
    return {
        "median_ratio": _median(present),
        "worst_ratio": max(present) if present else None,
        "worse_than_baseline": sum(1 for ratio in present if ratio > 1.1),
    }


def _of_kind(kinds: dict[int, str], kind: str, query_id: int) -> bool:
    return kinds[query_id] == kind


def _median(values: Iterable[float | None]) -> float | None:
    present = [value for value in values if value is not None]
    return round(float(np.median(present)), 4) if present else None


def _mean_curve(replays: list[Replay], max_labels: int) -> list[tuple[int, float]]:
    """Mean recall over the queries after n labels, at CURVE_POINTS points up to the budget; a query
    that stopped (target reached) keeps its last recall."""
    points = np.unique(np.linspace(1, max_labels, CURVE_POINTS).astype(int))
    return [(int(n), round(float(np.mean([item.recall_after(n) for item in replays])), 4)) for n in points]
