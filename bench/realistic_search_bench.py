"""Benchmark: search on embeddings shaped like CLIP's, beside the easy generator, per query type.

Two worlds of the same size, each in the embedding store's layout:
  easy       bench/search_bench.py's 10,000 evenly sized isotropic species; image-like queries only
  realistic  bench/realistic.py: long-tailed anisotropic genera around a common mean, near-duplicates,
             and text queries across a modality gap, beside image queries
For each world and each index (Quire's `Searcher`, default settings, candidates re-scored exactly):
  fastscan/rabitq  the default above 250k images (IVF, 1-bit RaBitQ fast-scan codes)
  fastscan/pq4     the earlier default (PCA to a quarter, IVF, 4-bit PQ fast-scan codes)
build time, bytes per vector, top-50 p50/p95 and recall@50 against the exact ranking per query type, beside
the exact baseline of the same run (FAISS flat over float16, a few queries: it is seconds each at 5M).
On the realistic world also: a species-filtered search (exact, over the species of one genus), and the
feedback ranking (SeeSaw's fit from 2,000 labels, then a search excluding them) with its recall against
the exact ranking of the fitted vector.

Usage:
  .venv/bin/python bench/realistic_search_bench.py [--n 1000000] [--dim 1024] [--queries 100]
      [--worlds easy realistic] [--codes rabitq pq4] [--workdir DIR]
Writes a JSON summary to bench/results/ and stdout's last line; progress on stderr.
"""

import argparse
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import realistic  # noqa: E402
from bench.search_bench import draw, exact_truth, log, percentile, recall, species_centres, timed  # noqa: E402
from search import index as search_index  # noqa: E402
from search import strategies  # noqa: E402
from search.store import Embeddings  # noqa: E402

K = 50


def make_world(
    name: str, n: int, dim: int, folder: Path, seed: int, count: int
) -> tuple[Embeddings, dict[str, np.ndarray]]:
    """The world's store (made once, then reused from `folder`) and its queries by type."""
    if name == "realistic":
        world = realistic.World.make(n, dim, seed)
        queries = {"image": world.image_queries(count), "text": world.text_queries(count)}
        chunks = world.chunks()
    else:
        rng = np.random.default_rng(seed)
        centres = species_centres(dim, rng)
        queries = {"image": draw(centres, rng.integers(0, len(centres), size=count), rng).astype(np.float32)}
        taxa = np.sort(rng.integers(0, len(centres), size=n))
        chunks = ((draw(centres, taxa[s : s + 200_000], rng), taxa[s : s + 200_000]) for s in range(0, n, 200_000))
    log(f"{name}: {n:,} x {dim} (generated unless {folder} holds it)")
    vectors, taxon_ids = realistic.write_store(chunks, n, dim, folder)
    return Embeddings(vectors, np.arange(1, n + 1, dtype=np.int64), taxon_ids), queries


def measure(searcher, queries: np.ndarray, truth: np.ndarray, embeddings: Embeddings, **options) -> dict:
    """p50, p95 and recall@K of `searcher` over `queries` (after 5 to warm the lists and store pages)."""

    def one(query):
        return searcher.search(query, k=K, **options)

    timed(one, queries[:5])
    times, results = timed(one, queries)
    truth_ids = [embeddings.image_ids[rows].tolist() for rows in truth]
    return {"p50_ms": percentile(times, 50), "p95_ms": percentile(times, 95), "recall": recall(results, truth_ids)}


def bench_world(name: str, args) -> dict:
    import faiss

    work = Path(args.workdir) / f"{name}-{args.n}x{args.dim}"
    embeddings, queries = make_world(name, args.n, args.dim, work, args.seed, args.queries)
    result: dict = {"world": name, "n": args.n, "dim": args.dim}
    log(f"{name}: exact ground truth")
    truth = {kind: exact_truth(embeddings.vectors, q, K) for kind, q in queries.items()}
    if name == "realistic":
        result["statistics"] = realistic.describe(embeddings.vectors, realistic.World.make(args.n, args.dim, args.seed))
        log(f"statistics: {result['statistics']}")

    # FAISS's flat index over float16, up to 1M: beyond, its copy of the store would push the store itself out
    # of the page cache. The exact path in place is measured below (`exact_in_place`) at every size.
    if args.n <= 1_000_000:
        flat = search_index.Searcher(embeddings, search_index.build(embeddings, "flat"))
        result["flat"] = {
            kind: measure(flat, q[: args.flat_queries], truth[kind][: args.flat_queries], embeddings)
            for kind, q in queries.items()
        }
        log(f"{name} flat: {result['flat']}")
        del flat

    for codes in args.codes:
        started = time.perf_counter()
        index = search_index.build(embeddings, "fastscan", codes=codes)
        entry: dict = {"build_s": time.perf_counter() - started}
        entry["bytes_per_vector"] = len(faiss.serialize_index(index)) / args.n
        searcher = search_index.Searcher(embeddings, index, labels="image_ids")
        entry["breadth"] = {"narrow": list(searcher.narrow), "wide": list(searcher.wide)}
        for kind, q in queries.items():  # the engine searches texts wide, an image's own vector narrow
            entry[kind] = measure(searcher, q, truth[kind], embeddings, wide=kind == "text")
        entry["sweep"] = []  # other breadths, the same for both query types: the recall/latency curve
        for nprobe, rerank in (tuple(map(int, b.split(":"))) for b in args.sweep if codes == "rabitq"):
            other = search_index.Searcher(embeddings, index, labels="image_ids", nprobe=nprobe, rerank=rerank)
            point = {
                "breadth": list(other.narrow),
                **{kind: measure(other, q, truth[kind], embeddings) for kind, q in queries.items()},
            }
            log(f"{name} {codes} {point}")
            entry["sweep"].append(point)
        log(f"{name} {codes}: {entry}")
        result[codes] = entry
        if codes == args.codes[0]:  # what does not depend on the codes: measured once
            # Every row ranked exactly over the memory-mapped store in place (the filter path, every taxon).
            everything = np.unique(embeddings.taxon_ids).tolist()
            result["exact_in_place"] = {
                kind: measure(
                    searcher, q[: args.flat_queries], truth[kind][: args.flat_queries], embeddings, taxon_ids=everything
                )
                for kind, q in queries.items()
            }
        if name == "realistic" and codes == args.codes[0]:  # the species filter and the feedback ranking
            result["filtered"] = bench_filtered(searcher, embeddings, queries["text"])
            result["feedback"] = bench_feedback(searcher, embeddings, queries["image"], args)
        del searcher, index
    return result


def bench_filtered(searcher, embeddings: Embeddings, queries: np.ndarray) -> dict:
    """Text queries restricted to the species of one mid-sized genus each (exact: recall 1 by design)."""
    taxa = np.unique(embeddings.taxon_ids)
    rng = np.random.default_rng(5)
    out = []
    for query in queries[:50]:
        chosen = rng.choice(taxa, size=10, replace=False)
        rows = searcher.rows_of_taxa(chosen)
        scores = np.asarray(embeddings.vectors[rows], dtype=np.float32) @ query
        expected = set(embeddings.image_ids[rows[np.argsort(-scores)[:K]]].tolist())
        started = time.perf_counter()
        hits = searcher.search(query, k=K, taxon_ids=chosen.tolist(), wide=True)
        out.append(
            (
                1000 * (time.perf_counter() - started),
                len({h.image_id for h in hits} & expected) / max(1, len(expected)),
                len(rows),
            )
        )
    times, recalls, sizes = zip(*out, strict=True)
    result = {
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "recall": float(np.mean(recalls)),
        "median_images": int(np.median(sizes)),
    }
    log(f"filtered: {result}")
    return result


def bench_feedback(searcher, embeddings: Embeddings, queries: np.ndarray, args) -> dict:
    """After 2,000 labels (a tenth relevant), fit SeeSaw's vector and search excluding the labeled images."""
    rng = np.random.default_rng(7)
    strategies.feedback_vector(
        queries[0],
        np.asarray(embeddings.vectors[:20], dtype=np.float32),
        np.asarray(embeddings.vectors[20:60], dtype=np.float32),
    )  # the first fit imports scikit-learn
    times, recalls = [], []
    for query in queries[: args.feedback_queries]:
        labeled = np.array([hit.image_id for hit in searcher.search(query, k=2000)], dtype=np.int64)
        relevant = rng.random(len(labeled)) < 0.1
        rows = labeled - 1  # image ids are rows + 1 here
        positives = np.asarray(embeddings.vectors[np.sort(rows[relevant])], dtype=np.float32)
        negatives = np.asarray(embeddings.vectors[np.sort(rows[~relevant])], dtype=np.float32)
        started = time.perf_counter()
        vector = strategies.feedback_vector(query, positives, negatives).astype(np.float32)
        hits = searcher.search(vector, k=K, exclude_image_ids=labeled.tolist(), wide=True)
        times.append(1000 * (time.perf_counter() - started))
        best = exact_truth(embeddings.vectors, vector[None, :], K + len(labeled))[0]
        expected = [i for i in (best + 1).tolist() if i not in set(labeled.tolist())][:K]
        recalls.append(len({h.image_id for h in hits} & set(expected)) / K)
    result = {
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "recall": float(np.mean(recalls)),
        "queries": len(times),
    }
    log(f"feedback: {result}")
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--flat-queries", type=int, default=10)
    parser.add_argument("--feedback-queries", type=int, default=10)
    parser.add_argument("--worlds", nargs="+", default=["easy", "realistic"], choices=["easy", "realistic"])
    parser.add_argument(
        "--codes", nargs="+", default=list(search_index.FASTSCAN_CODES), choices=search_index.FASTSCAN_CODES
    )
    parser.add_argument(
        "--sweep",
        nargs="*",
        default=[],
        metavar="NPROBE:RERANK",
        help="more breadths to measure the RaBitQ index at, e.g. 22:1000 45:1000 559:10000",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "quire-realistic-bench"))
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(os.cpu_count())
    load = os.getloadavg()
    result = {"cpus": os.cpu_count(), "load_before": load, "worlds": [bench_world(w, args) for w in args.worlds]}
    result["load_after"] = os.getloadavg()
    result["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"realistic_search_{args.n}x{args.dim}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
