"""Benchmark: what a user waits for after a restart, and what warming costs (the 100M plan's inputs).

On the realistic world that bench/realistic_search_bench.py generated (its --workdir), with Quire's default
fast-scan index (built and saved here once if absent):
  1. the page cache is dropped (`sync`, then /proc/sys/vm/drop_caches: root only; without it the run says
     so and measures a warm start instead)
  2. load: the index file read into memory and the Searcher made (taxon and id orders)
  3. searches on the cold store: image queries (narrow) and text queries (wide), each re-scoring its
     candidates from float16 rows not in the page cache, beside the same queries once warm
  4. warming: the store read once, sequentially, as a web worker does as it starts (search.store.warm;
     `cat vectors.npy > /dev/null` or `vmtouch -t` do the same), then the same searches again
Medians over the queries; the first cold query is reported on its own.

Usage:
  .venv/bin/python bench/cold_start_bench.py [--n 5000000] [--dim 1024] [--queries 20]
      [--workdir /tmp/quire-realistic-bench]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench import realistic  # noqa: E402
from bench.search_bench import log  # noqa: E402
from search import index as search_index  # noqa: E402
from search.store import Embeddings, warm  # noqa: E402


def drop_page_cache() -> bool:
    subprocess.run(["sync"], check=False)
    try:
        Path("/proc/sys/vm/drop_caches").write_text("3\n")
    except OSError as error:
        log(f"could not drop the page cache ({error}): this run measures a warm start")
        return False
    return True


def timed_searches(searcher, queries: np.ndarray, *, wide: bool) -> list[float]:
    times = []
    for query in queries:
        started = time.perf_counter()
        searcher.search(query, k=50, wide=wide)
        times.append(1000 * (time.perf_counter() - started))
    return times


def summary(times: list[float]) -> dict:
    return {"first_ms": times[0], "median_ms": statistics.median(times), "max_ms": max(times)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=5_000_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=20)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "quire-realistic-bench"))
    args = parser.parse_args()
    folder = Path(args.workdir) / f"realistic-{args.n}x{args.dim}"
    vectors_path = folder / "vectors.npy"
    if not vectors_path.exists():
        sys.exit(f"No realistic world at {folder}: run bench/realistic_search_bench.py --n {args.n} first.")
    index_folder = folder / "index"
    result: dict = {"n": args.n, "dim": args.dim, "cpus": os.cpu_count()}

    def embeddings() -> Embeddings:
        taxa = np.load(folder / "taxon_ids.npy")
        return Embeddings(np.load(vectors_path, mmap_mode="r"), np.arange(1, args.n + 1, dtype=np.int64), taxa)

    if not (index_folder / "current.json").exists():
        log("building and saving the default fast-scan index")
        started = time.perf_counter()
        index = search_index.build(embeddings(), "fastscan")
        result["build_s"] = time.perf_counter() - started
        search_index.save(index, index_folder, kind="fastscan", count=args.n)
        del index
    world = realistic.World.make(args.n, args.dim, 0)
    images, texts = world.image_queries(args.queries, seed=21), world.text_queries(args.queries, seed=21)

    result["cache_dropped"] = drop_page_cache()
    started = time.perf_counter()
    index, info = search_index.load(index_folder)
    searcher = search_index.Searcher(embeddings(), index, labels=info["labels"])
    result["load_s"] = time.perf_counter() - started
    result["index_bytes"] = (index_folder / info["file"]).stat().st_size
    log(f"loaded in {result['load_s']:.1f} s")
    result["cold_image"] = summary(timed_searches(searcher, images, wide=False))
    result["cold_text"] = summary(timed_searches(searcher, texts, wide=True))
    log(f"cold: {result['cold_image']} {result['cold_text']}")

    started = time.perf_counter()
    _, said = warm(searcher.embeddings.vectors)  # what a web worker does as it starts
    result["warm_read_s"], result["warm"] = time.perf_counter() - started, said
    result["store_bytes"] = vectors_path.stat().st_size
    log(f"store read in {result['warm_read_s']:.1f} s")
    result["warm_image"] = summary(timed_searches(searcher, images, wide=False))
    result["warm_text"] = summary(timed_searches(searcher, texts, wide=True))
    log(f"warm: {result['warm_image']} {result['warm_text']}")
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"cold_start_{args.n}x{args.dim}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
