"""Benchmark: the learning rankings replayed by an annotator who is right, then wrong 5% of the time, on the
worlds a team meets (evaluation/worlds.py), each query beside the text order; and what the batch rules
(search/batches.py) cost per candidates call at 60,000 images.

Three columns per strategy, all in the same run: the text order (the baseline), the rules before issue 23
(SeeSaw's full class balance, the plain learned ranking: reproduced here by switching the new rules off),
and today's. Labels to 95% of each query's positives (50% for the crowd's extra column), batches of 50.

Speed: at 60,000 x 1024 float32 (exact inner products, as the flat index scores them), for labeled sets
of 500 and 2,000 images, the median time of one batch of 50 under today's rules (fit, text order,
stacks) beside the plain learned ranking's (fit, one top-50), over --trials trials; and the rules alone
through the engine's FAISS index and float16 store (engine_speed) beside one search of it.

Usage:
  .venv/bin/python bench/robust_learning_bench.py [--seeds 3] [--trials 15] [--json out.json]
"""

import argparse
import contextlib
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
os.environ.setdefault("DEBUG", "1")

import django  # noqa: E402

django.setup()

from evaluation import simulation, worlds  # noqa: E402
from search import batches, strategies  # noqa: E402

STRATEGIES = ("feedback", "rocchio", "alpha_qe")


@contextlib.contextmanager
def rules_before_issue_23():
    """SeeSaw's n_neg / n_pos class weights and the plain learned ranking (no stacks, no text floor)."""
    prior, compose = strategies.PRIOR_POSITIVES, simulation.compose_batch

    def plain(collection, *, learned, text, k, exclude, **_):
        return [batches.Pick(image_id, batches.LEARNED) for image_id in collection.top(learned, k, exclude)]

    strategies.PRIOR_POSITIVES, simulation.compose_batch = 0.0, plain
    try:
        yield
    finally:
        strategies.PRIOR_POSITIVES, simulation.compose_batch = prior, compose


def labels_to(world, query_id, strategy, noise, share=0.95, max_labels=12_000):
    replay = simulation.replay(
        simulation.world_ranker(world, query_id), query_id, strategy, world.positives[query_id],
        target=share, max_labels=max_labels, mistaken=simulation.annotator_mistakes(noise, query_id),
    )  # fmt: skip
    return replay.labels_to(share) or max_labels  # never: the budget (a lower bound)


def replay_world(world, seed, noise) -> list[dict]:
    rows = []
    for query_id, kind in world.kinds.items():
        row = {"seed": seed, "query": query_id, "kind": kind, "positives": len(world.positives[query_id])}
        row["text"] = labels_to(world, query_id, "text", noise)
        if kind == "crowd":
            row["text_50"] = labels_to(world, query_id, "text", noise, 0.5)
        for strategy in STRATEGIES:
            row[strategy] = labels_to(world, query_id, strategy, noise)
            with rules_before_issue_23():
                row[f"{strategy}_before"] = labels_to(world, query_id, strategy, noise)
            if kind == "crowd":
                row[f"{strategy}_50"] = labels_to(world, query_id, strategy, noise, 0.5)
                with rules_before_issue_23():
                    row[f"{strategy}_before_50"] = labels_to(world, query_id, strategy, noise, 0.5)
        rows.append(row)
        print(".", end="", flush=True, file=sys.stderr)
    return rows


def summary(rows) -> dict:
    result = {}
    for strategy in STRATEGIES:
        for version in ("", "_before"):
            name = strategy + version
            ratios = [row[name] / row["text"] for row in rows]
            hard = [row[name] / row["text"] for row in rows if row["kind"] != "easy"]
            crowd = [row[f"{name}_50"] / row["text_50"] for row in rows if row["kind"] == "crowd"]
            result[name] = {
                "median_ratio_not_easy": round(statistics.median(hard), 3),
                "median_ratio_hard_kind": round(
                    statistics.median([r[name] / r["text"] for r in rows if r["kind"] == "hard"]), 3
                ),
                "worst_ratio": round(max(ratios), 3),
                "queries_over_1.1": sum(ratio > 1.1 for ratio in ratios),
                "queries": len(ratios),
                "crowd_50_worst_ratio": round(max(crowd), 3) if crowd else None,
            }
    return result


def _fit(text, positives, negatives) -> np.ndarray:
    return strategies.feedback_vector(text, positives, negatives).astype(np.float32)


def _timed_batches(world, collection, plain, trials: int, seed: int, *, fit_timed: bool) -> dict:
    """Median ms per batch of 50 under today's rules beside `plain(vector, labeled)` (the baseline's step),
    for an annotator with 500 and with 2,000 labeled images (a tenth relevant) who then labels `trials`
    batches in a row (each batch's images join the labeled, as on the labeling page), the fit timed with
    both or with neither. The first batch of the row (the text order searched, not yet remembered) is
    reported on its own."""
    rng = np.random.default_rng(seed)
    text = world.texts[1].astype(np.float32)
    truth = world.positives[1]
    out = {}
    for labeled_count in (500, 2000):
        plain_ms, rules_ms = [], []
        labeled = rng.choice(len(world.vectors), labeled_count, replace=False).tolist()
        relevant, not_relevant = labeled[: labeled_count // 10], labeled[labeled_count // 10 :]
        for _ in range(trials):
            recent = [(image_id, image_id in set(relevant)) for image_id in labeled[-400:]]
            positives, negatives = world.vectors[relevant], world.vectors[not_relevant]
            vector = None if fit_timed else _fit(text, positives, negatives)
            started = time.perf_counter()
            plain(_fit(text, positives, negatives) if fit_timed else vector, set(labeled))
            plain_ms.append(1000 * (time.perf_counter() - started))
            started = time.perf_counter()
            picks = batches.compose(
                collection, learned=_fit(text, positives, negatives) if fit_timed else vector, text=text, k=50,
                exclude=set(labeled), relevant=positives, not_relevant=negatives, recent=recent,
            )  # fmt: skip
            rules_ms.append(1000 * (time.perf_counter() - started))
            for pick in picks:  # the annotator labels the batch (rightly)
                labeled.append(pick.image_id)
                (relevant if pick.image_id in truth else not_relevant).append(pick.image_id)
        plain_median, rules_median = statistics.median(plain_ms[1:]), statistics.median(rules_ms[1:])
        out[labeled_count] = {
            "plain_ms": round(plain_median, 1),
            "rules_ms": round(rules_median, 1),
            "ratio": round(rules_median / plain_median, 2),
            "first_batch_rules_ms": round(rules_ms[0], 1),
        }
    return out


def speed(trials: int) -> dict:
    """numpy's exact scores at 60,000 x 1024 float32, the fit timed: the plain learned ranking's top 50 beside
    today's rules."""
    world = worlds.team_world(images=60_000, dim=1024, per_kind=1, seed=0, kinds=("hard",))
    collection = simulation._Exact(world.vectors)
    return _timed_batches(
        world, collection, lambda vector, labeled: collection.top(vector, 50, labeled), trials, 0, fit_timed=True
    )


def engine_speed(trials: int) -> dict:
    """The same batch through the engine's own path: a FAISS index over a float16 store of 60,000 x 1024
    (what `build_index` makes at that size), engine._Indexed as the collection, beside the plain learned
    ranking's one search with the labeled images excluded (the fit not timed)."""
    import faiss

    from search import engine
    from search import index as faiss_index
    from search.store import Embeddings

    count = 60_000
    world = worlds.team_world(images=count, dim=1024, per_kind=1, seed=0, kinds=("hard",))
    store = Embeddings(world.vectors.astype(np.float16), np.arange(count, dtype=np.int64), np.zeros(count, np.int64))
    kind = faiss_index.choose_kind(count)
    searcher = engine.Searcher(store, faiss_index.build(store, kind), labels=faiss_index.labels_of(kind))
    # The text order is remembered between the batches of a row, as the labeling page's worker does.
    collection = engine._Indexed(engine._Loaded((0, 0, 0), searcher), None, world.texts[1])

    def search(vector, labeled):
        return searcher.search(vector, k=50, exclude_image_ids=labeled)

    timings = _timed_batches(world, collection, search, trials, 1, fit_timed=False)
    return {"index": kind, "faiss_threads": faiss.omp_get_max_threads(), **timings}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--trials", type=int, default=15)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    result = {"worlds": {}, "summary": {}}
    for noise in (0.0, 0.05):
        rows = []
        for seed in range(args.seeds):
            rows += replay_world(worlds.team_world(seed=seed), seed, noise)
        result["worlds"][str(noise)] = rows
        result["summary"][str(noise)] = summary(rows)
        print(f"\nnoise {noise}: {json.dumps(result['summary'][str(noise)], indent=1)}", flush=True)
    result["speed"] = speed(args.trials)
    result["engine"] = engine_speed(args.trials)
    print(json.dumps({"speed": result["speed"], "engine": result["engine"]}, indent=1))
    if args.json:
        args.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
