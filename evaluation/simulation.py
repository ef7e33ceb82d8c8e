"""Replaying an oracle annotator over ground truth, to measure how fast a ranking strategy finds positives.

The annotator labels the next `batch` candidates the strategy proposes (those with no label yet), each
relevant when the ground truth lists it and not relevant otherwise, then asks again with everything
labeled so far: the loop the labeling page and the candidates API run. A strategy is a function
rank(strategy, relevant_ids, not_relevant_ids, exclude_ids, k) -> image ids, best first; the same
replay drives the synthetic world below (exact numpy ranking) and the real collection
(search.facade.rank).

Reported per query: labels spent to find 50 / 90 / 95% of the positives, recall after 100 / 500 /
1,000 labels, where INQUIRE's rule (stop after 100 not-relevant labels in a row) would have stopped
and the recall it had then, and how far the stopping estimate (annotator/stopping.py) was from the
true recall: its mean absolute error over the batches, and the true recall when it first claimed the
target.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from annotator.facade import DEPTH, cross_fitted
from search.facade import LABEL_ONLY_STRATEGIES, strategy_vector

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

    def summary(self, target: float = 0.95) -> dict:
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
            "estimate_stops_at": estimate_stop[0] if estimate_stop else None,
            "recall_at_estimate_stop": round(estimate_stop[1], 4) if estimate_stop else None,
        }


def replay(
    rank: Callable,
    query_id: int,
    strategy: str,
    positives: set[int],
    *,
    batch: int = 50,
    target: float = 0.95,
    max_labels: int = 2000,
    estimate: Callable | None = None,
) -> Replay:
    """Run the oracle annotator until `target` of the positives are found or `max_labels` are spent.
    `estimate(relevant, not_relevant)`, when given, is the recall estimate after each batch (or None)."""
    result = Replay(query_id, strategy, len(positives))
    relevant, not_relevant = [], []
    found = 0
    while len(result.found) < max_labels and found < target * len(positives):
        proposed = rank(
            strategy, relevant, not_relevant, relevant + not_relevant, min(batch, max_labels - len(result.found))
        )
        if not proposed:
            break
        for image_id in proposed:
            if image_id in positives:
                relevant.append(image_id)
                found += 1
            else:
                not_relevant.append(image_id)
            result.found.append(found)
        if estimate is not None:
            result.estimates.append((len(result.found), estimate(relevant, not_relevant), found / len(positives)))
    return result


# --- a synthetic world with known answers, for tests and the benchmark: CLIP-shaped vectors, no weights needed


@dataclass
class World:
    vectors: np.ndarray  # (N, dim) unit rows
    texts: dict[int, np.ndarray]  # query id -> its "text" vector
    positives: dict[int, set[int]]
    hard: dict[int, bool]


def _unit(rows):
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


def synthetic_world(
    *,
    images: int = 20_000,
    dim: int = 64,
    species: int = 200,
    queries: int = 20,
    separation: float = 0.4,
    noise: float = 1.0,
    seed: int = 0,
) -> World:
    """A collection shaped like INQUIRE's hard queries ("Black Skimmer performing skimming"): the text
    finds the species, not the behaviour.

    Images sit around species centres (`noise`: spread per image). Each query has a species s and a
    behaviour direction b orthogonal to it. Its species' images form the crowd (right species, wrong
    picture) around s; its positives sit around s + `separation` * b. The query's text vector is
    s + h b plus a little noise: on hard queries (even ids) the text barely says the behaviour (h = 0.15)
    and the species has a large crowd (1,500 images), so the text ranks the positives scattered
    through the crowd; on easy ones (odd ids) the text says it (h = 1) and the crowd is small (300).
    A ranking that learns b from a few positives wins on the hard queries and should not lose on the
    easy ones. `separation` sets how far the expert's meaning is from the crowd; bench/RESULTS.md
    shows the result at several values.
    """
    rng = np.random.default_rng(seed)
    centres = _unit(rng.normal(size=(species, dim)))
    spread = noise / np.sqrt(dim)
    vectors = _unit(centres[rng.integers(0, species, size=images)] + spread * rng.normal(size=(images, dim)))
    texts, positives, hard = {}, {}, {}
    free = rng.permutation(images)
    cursor = 0
    for query_id in range(1, queries + 1):
        is_hard = query_id % 2 == 0
        centre = _unit(rng.normal(size=dim))
        behaviour = _unit(rng.normal(size=dim))
        behaviour = _unit(behaviour - (behaviour @ centre) * centre)
        hint = 0.15 if is_hard else 1.0
        text = _unit(centre + hint * behaviour + 0.2 * _unit(rng.normal(size=dim)))
        count = int(rng.integers(30, 90))
        crowd = 1500 if is_hard else 300
        members = free[cursor : cursor + count + crowd]
        cursor += count + crowd
        if cursor > images:
            raise ValueError(f"{queries} queries need more than {images} images; give more images or fewer queries")
        vectors[members[:count]] = _unit(centre + separation * behaviour + spread * rng.normal(size=(count, dim)))
        vectors[members[count:]] = _unit(centre + spread * rng.normal(size=(crowd, dim)))
        texts[query_id], positives[query_id], hard[query_id] = text, set(members[:count].tolist()), is_hard
    return World(vectors.astype(np.float32), texts, positives, hard)


def world_ranker(world: World, query_id: int) -> Callable:
    """rank(...) over the synthetic world: the strategies' vectors, scored exactly with numpy."""

    def rank(strategy, relevant, not_relevant, exclude, k):
        if strategy not in LABEL_ONLY_STRATEGIES:
            raise ValueError(f"the synthetic world ranks by {', '.join(LABEL_ONLY_STRATEGIES)}, not {strategy!r}")
        vector = strategy_vector(
            strategy,
            world.texts[query_id],
            world.vectors[relevant],
            world.vectors[not_relevant],
            collection=world.vectors,
        )
        scores = world.vectors @ vector.astype(np.float32)
        scores[list(exclude)] = -np.inf
        top = np.argpartition(-scores, k)[:k]
        return [int(i) for i in top[np.lexsort((top, -scores[top]))]]

    return rank


def world_estimator(world: World, query_id: int, depth: int = DEPTH) -> Callable:
    """estimate(relevant, not_relevant) over the synthetic world, computed as the labeling page does
    (annotator.stopping.cross_fitted): exact numpy scores instead of the index."""

    def score(image_ids, relevant, not_relevant, exclude=None):
        vector = strategy_vector(
            "feedback", world.texts[query_id], world.vectors[relevant], world.vectors[not_relevant]
        )
        scores = world.vectors @ vector.astype(np.float32)
        if exclude is None:
            return scores[list(image_ids)]
        scores = np.delete(scores, list(exclude))
        return scores[np.argpartition(-scores, min(depth, len(scores) - 1))[:depth]]

    def estimate(relevant, not_relevant):
        result = cross_fitted(score, relevant, not_relevant)
        return None if result is None else result.recall

    return estimate


def compare(replays: list[Replay], baseline: str = "text", target: float = 0.95) -> list[dict]:
    """Per query: labels to `target` for each strategy and its ratio to the baseline's."""
    by_query: dict[int, dict[str, Replay]] = {}
    for item in replays:
        by_query.setdefault(item.query_id, {})[item.strategy] = item
    rows = []
    for query_id, items in sorted(by_query.items()):
        base = items[baseline].labels_to(target)
        row = {"query_id": query_id, baseline: base}
        for name, item in items.items():
            if name != baseline:
                spent = item.labels_to(target)
                row[name] = spent
                row[f"{name}_ratio"] = round(spent / base, 3) if spent and base else None
        rows.append(row)
    return rows


# --- a whole simulation: every query, every strategy -------------------------------------------------

CURVE_POINTS = 40  # points per recall-against-labels curve


def simulate(
    positives: dict[int, set[int]],
    rankers: dict[int, tuple[Callable, Callable | None]],
    strategies: list[str],
    *,
    batch: int = 50,
    target: float = 0.95,
    max_labels: int = 2000,
    progress: Callable | None = None,
    hard: dict[int, bool] | None = None,
) -> dict:
    """Replay every query (`rankers`: query id -> (rank, estimate or None)) with every strategy. Returns
    what `manage.py simulate_labeling --json` writes: the settings, one summary per query and strategy,
    per-query ratios against the first strategy, medians per strategy (and per hard/easy group when
    `hard` is given) and the mean recall-against-labels curve per strategy."""
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
                )
            )
            if progress:
                progress(len(replays), total)
    rows = [item.summary(target) for item in replays]
    for row in rows:
        if hard is not None:
            row["hard"] = hard[row["query_id"]]
    key = f"labels_to_{round(100 * target)}"
    return {
        "settings": {"strategies": strategies, "batch": batch, "target": target, "max_labels": max_labels},
        "queries": rows,
        "versus": compare(replays, baseline=strategies[0], target=target),
        "medians": _medians(rows, strategies, key, hard),
        "curves": {
            strategy: _mean_curve([r for r in replays if r.strategy == strategy], max_labels) for strategy in strategies
        },
    }


def _medians(rows, strategies, key, hard) -> dict:
    """Median labels to the target per strategy (queries that never got there count as the budget,
    which flatters the strategy that missed: their number is given beside), overall and per group."""
    groups = {"all": lambda row: True}
    if hard is not None:
        groups |= {"hard": lambda row: row["hard"], "easy": lambda row: not row["hard"]}
    result = {}
    for group, member in groups.items():
        result[group] = {}
        for strategy in strategies:
            chosen = [row for row in rows if row["strategy"] == strategy and member(row)]
            spent = [row[key] for row in chosen if row[key] is not None]
            result[group][strategy] = {
                "median_labels": float(np.median(spent)) if spent else None,
                "missed": len(chosen) - len(spent),
                "median_estimate_error": _median([row["estimate_error"] for row in chosen]),
            }
        baseline = strategies[0]
        for strategy in strategies[1:]:
            ratios = _ratios(rows, baseline, strategy, key, member)
            result[group][strategy]["median_ratio"] = _median(ratios)
    return result


def _ratios(rows, baseline, strategy, key, member) -> list[float]:
    spent = {(row["query_id"], row["strategy"]): row[key] for row in rows if member(row)}
    return [
        spent[(query_id, strategy)] / spent[(query_id, baseline)]
        for query_id, name in spent
        if name == baseline and spent[(query_id, baseline)] and spent.get((query_id, strategy))
    ]


def _median(values) -> float | None:
    values = [value for value in values if value is not None]
    return round(float(np.median(values)), 4) if values else None


def _mean_curve(replays: list[Replay], max_labels: int) -> list[tuple[int, float]]:
    """Mean recall over the queries after n labels, at CURVE_POINTS points up to the budget; a query
    that stopped (target reached) keeps its last recall."""
    points = np.unique(np.linspace(1, max_labels, CURVE_POINTS).astype(int))
    return [(int(n), round(float(np.mean([item.recall_after(n) for item in replays])), 4)) for n in points]
