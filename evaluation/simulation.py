"""Replaying an oracle annotator over ground truth, to measure how fast a ranking strategy finds positives.

The annotator labels the next `batch` candidates the strategy proposes (those with no label yet), each
relevant when the ground truth lists it and not relevant otherwise, then asks again with everything
labeled so far: the loop the labeling page and the candidates API run. A strategy is a function
rank(strategy, relevant_ids, not_relevant_ids, exclude_ids, k) -> image ids, best first; the same
replay drives the synthetic world below (exact numpy ranking) and the real collection
(search.facade.rank).

Reported per query: labels spent to find 50 / 90 / 95% of the positives, recall after 100 / 500 /
1,000 labels, where INQUIRE's rule (stop after 100 not-relevant labels in a row) would have stopped
and the recall it had then.
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from search.facade import strategy_vector

TARGETS = (0.5, 0.9, 0.95)
CHECKPOINTS = (100, 500, 1000)
RUN_RULE = 100


@dataclass
class Replay:
    query_id: int
    strategy: str
    positives: int
    found: list[int] = field(default_factory=list)  # positives found after each label (cumulative)

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

    def summary(self) -> dict:
        stop = self.rule_stop()
        return {
            "query_id": self.query_id,
            "strategy": self.strategy,
            "positives": self.positives,
            **{f"labels_to_{round(100 * t)}": self.labels_to(t) for t in TARGETS},
            **{f"recall_at_{n}": round(self.recall_after(n), 4) for n in CHECKPOINTS},
            "rule_stops_at": stop[0] if stop else None,
            "recall_at_rule_stop": round(stop[1], 4) if stop else None,
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
) -> Replay:
    """Run the oracle annotator until `target` of the positives are found or `max_labels` are spent."""
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
    return result


# --- a synthetic world, for tests and the benchmark (no CLIP weights exist on these machines) -------


@dataclass
class World:
    vectors: np.ndarray  # (N, dim) unit rows
    texts: dict[int, np.ndarray]  # query id -> its "text" vector
    positives: dict[int, set[int]]
    hard: dict[int, bool]


def synthetic_world(
    *, images: int = 20_000, dim: int = 64, species: int = 200, queries: int = 20, seed: int = 0
) -> World:
    """Species clusters; each query's positives sit partly off its text direction (hard queries far
    off, easy ones near), and a crowd of "right words, wrong picture" images sits close to the text."""
    rng = np.random.default_rng(seed)

    def unit(rows):
        return rows / np.linalg.norm(rows, axis=-1, keepdims=True)

    centres = unit(rng.normal(size=(species, dim)))
    labels = rng.integers(0, species, size=images)
    vectors = unit(centres[labels] + 0.55 * rng.normal(size=(images, dim)) / np.sqrt(dim) * np.sqrt(dim) / 3)
    texts, positives, hard = {}, {}, {}
    free = rng.permutation(images)
    cursor = 0
    for query_id in range(1, queries + 1):
        is_hard = query_id % 2 == 0
        text = unit(rng.normal(size=dim))
        meant = unit(text + (1.6 if is_hard else 0.4) * unit(rng.normal(size=dim)))  # what the expert means
        count = int(rng.integers(20, 80))
        crowd = 300 if is_hard else 60
        members = free[cursor : cursor + count + crowd]
        cursor += count + crowd
        vectors[members[:count]] = unit(meant + 0.35 * unit(rng.normal(size=(count, dim))))
        vectors[members[count:]] = unit(text + 0.35 * unit(rng.normal(size=(crowd, dim))))
        texts[query_id], positives[query_id], hard[query_id] = text, set(members[:count].tolist()), is_hard
    return World(vectors.astype(np.float32), texts, positives, hard)


def world_ranker(world: World, query_id: int) -> Callable:
    """rank(...) over the synthetic world: the strategies' vectors, scored exactly with numpy."""

    def rank(strategy, relevant, not_relevant, exclude, k):
        if strategy not in ("text", "feedback", "rocchio"):
            raise ValueError(f"the synthetic world ranks by text, feedback or rocchio, not {strategy!r}")
        vector = strategy_vector(strategy, world.texts[query_id], world.vectors[relevant], world.vectors[not_relevant])
        scores = world.vectors @ vector.astype(np.float32)
        scores[list(exclude)] = -np.inf
        top = np.argpartition(-scores, k)[:k]
        return [int(i) for i in top[np.lexsort((top, -scores[top]))]]

    return rank


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
