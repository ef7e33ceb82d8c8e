"""Benchmark: search that holds for any query vector, on worlds of several shapes (issue 41).

A vector reaches `search.facade.search(vector=...)` without saying what it is: an image's, a text's (a
researcher's own encoder, INQUIRE's precomputed text embeddings), a fitted one. For each world of
`bench/realistic.py`'s SHAPES (each at its own dimension) this builds the index `build_index` picks above
250k images (RaBitQ fast-scan) and measures, per query type (image-like, text-like), recall@50 against the
exact ranking, p50 and p95:

  new default       Quire's `Searcher` as the engine now searches a vector: the narrow breadth, widened per
                    search as its own results require (search/index.py, CHECKED), up to ranking every
                    image exactly
  new, hinted       the same, told `wide=True` for the text-like queries (what the engine says for a typed text)
  old default       the fixed wide breadth the engine gave every vector before (issue 25), no widening
  exact             Quire's exact path over the memory-mapped store in place (a few queries: it is the baseline)

with the index's build time and bytes per vector (the float16 store, 2 x dim bytes, comes on top for every
kind). All in one run, one process, after 5 warm-up queries per row.

Usage:
  .venv/bin/python bench/ood_search_bench.py [--n 1000000] [--worlds clip:1024 lognormal-flat:512 steep-gap:1024]
      [--queries 100] [--exact-queries 10] [--workdir DIR]
Writes bench/results/ood_search_<n>.json, a Markdown table on stdout; progress on stderr.
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
from bench.search_bench import exact_truth, log, percentile, recall, timed  # noqa: E402
from search import index as search_index  # noqa: E402
from search.store import Embeddings  # noqa: E402

K = 50


def measure(search, queries: np.ndarray, truth_ids: list[list[int]]) -> dict:
    timed(search, queries[:5])
    times, results = timed(search, queries)
    return {
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "recall": recall(results, truth_ids),
        "lowest_recall": min(
            len({hit.image_id for hit in hits} & set(best)) / K for hits, best in zip(results, truth_ids, strict=True)
        ),
    }


def bench_world(shape: str, dim: int, args) -> dict:
    import faiss

    world = realistic.World.make(args.n, dim, args.seed, shape)
    log(f"{shape}: {args.n:,} x {dim}")
    vectors, taxa = realistic.stored(world, Path(args.workdir) / f"{shape}-{args.n}x{dim}")
    embeddings = Embeddings(vectors, np.arange(1, args.n + 1, dtype=np.int64), taxa)
    queries = {"image": world.image_queries(args.queries, seed=11), "text": world.text_queries(args.queries, seed=11)}
    truth = {kind: (exact_truth(vectors, q, K) + 1).tolist() for kind, q in queries.items()}
    result: dict = {"shape": shape, "n": args.n, "dim": dim, "statistics": realistic.describe(vectors, world)}
    log(f"{shape}: statistics {result['statistics']}")
    started = time.perf_counter()
    index = search_index.build(embeddings, "fastscan")
    result["build_s"] = time.perf_counter() - started
    result["bytes_per_vector"] = len(faiss.serialize_index(index)) / args.n
    result["store_bytes_per_vector"] = 2 * dim
    new = search_index.Searcher(embeddings, index, labels="image_ids")
    old = search_index.Searcher(embeddings, index, labels="image_ids", adaptive=False)
    result["breadths"] = {"narrow": list(new.narrow), "wide": list(new.wide)}
    everything = np.unique(taxa).tolist()  # every taxon: Quire's exact path in place
    rows: dict = {}
    for kind, q in queries.items():
        t, hint = truth[kind], kind == "text"
        rows[kind] = {
            "new default": measure(lambda v: new.search(v, k=K), q, t),
            "new, hinted": measure(lambda v, hint=hint: new.search(v, k=K, wide=hint), q, t),
            "old default": measure(lambda v: old.search(v, k=K, wide=True), q, t),
            "exact": measure(
                lambda v: new.search(v, k=K, taxon_ids=everything), q[: args.exact_queries], t[: args.exact_queries]
            ),
        }
        log(f"{shape} {kind}: {rows[kind]}")
    result["rows"] = rows
    return result


def table(results: list[dict]) -> str:
    lines = [
        "| world | query | search | recall@50 (lowest) | p50 / p95 ms | build s | bytes/vector |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for world in results:
        for kind, row in world["rows"].items():
            for name, m in row.items():
                exact = name == "exact"
                build = "0" if exact else f"{world['build_s']:.0f}"
                size = f"{world['store_bytes_per_vector']}" if exact else f"{world['bytes_per_vector']:.0f} + store"
                found = f"{m['recall']:.3f} ({m['lowest_recall']:.2f})"
                lines.append(
                    f"| {world['shape']} {world['dim']}-d | {kind} | {name} | {found} "
                    f"| {m['p50_ms']:.1f} / {m['p95_ms']:.1f} | {build} | {size} |"
                )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--worlds", nargs="+", default=["clip:1024", "lognormal-flat:512", "steep-gap:1024"])
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--exact-queries", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "quire-ood-bench"))
    args = parser.parse_args()
    for world in args.worlds:
        shape, _, dim = world.partition(":")
        if shape not in realistic.SHAPES or not dim.isdigit():
            parser.error(f"a world is SHAPE:DIM with SHAPE one of {', '.join(realistic.SHAPES)}, not {world!r}")
    result = {"cpus": os.cpu_count(), "load_before": os.getloadavg()}
    result["worlds"] = [bench_world(w.partition(":")[0], int(w.partition(":")[2]), args) for w in args.worlds]
    result["load_after"] = os.getloadavg()
    result["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"ood_search_{args.n}.json").write_text(json.dumps(result, indent=1))
    print(table(result["worlds"]))


if __name__ == "__main__":
    main()
