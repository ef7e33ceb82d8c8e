"""Benchmark: the Milvus backend beside FAISS, in the same run, on embeddings shaped like CLIP's.

The realistic world of bench/realistic.py (the store is made once under --workdir and reused), searched through
Quire's own backends (search/backends.py), so each figure includes what Quire does around the engine:
  faiss flat       exact, the float16 store scanned in place (Quire's Searcher): the baseline and the truth
  faiss fastscan   the default above 250k images (IVF, RaBitQ fast-scan codes, exact re-scoring)
  milvus FLAT      Milvus Lite, exact; Quire re-scores the page from the returned vectors
  milvus IVF_FLAT  Milvus Lite's approximate index (the narrow and wide breadths of search/milvus.py)
For each: the load or build time, top-50 p50/p95 and recall@50 for image queries (narrow) and text queries
(wide, across the modality gap); a species-filtered search; fetching 1,000 images' vectors (what the
feedback ranking reads of its labels); a search leaving 20,000 labeled images out. Milvus Lite runs Milvus's
own server binary as a child process on a Unix socket, on the same two cores as Quire: it measures the backend's
code and Milvus's FLAT and IVF_FLAT indexes here, not a Milvus cluster on machines of its own.

Usage:
  .venv/bin/python bench/milvus_bench.py [--n 1000000] [--dim 1024] [--queries 40] [--indexes FLAT IVF_FLAT]
      [--workdir DIR]
Writes a JSON summary to bench/results/ and stdout's last line; progress on stderr.
"""

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from django.conf import settings  # noqa: E402

from bench.realistic_search_bench import K, make_world, measure  # noqa: E402
from bench.search_bench import exact_truth, log, percentile, timed  # noqa: E402
from search import index as search_index  # noqa: E402
from search.backends import FaissVectors  # noqa: E402
from search.store import Embeddings  # noqa: E402

MODEL = "bench/realistic"


def per_query_type(backend, queries, truth, embeddings) -> dict:
    """Image queries narrow, text queries wide: as the engine asks (search/engine.py)."""
    return {kind: measure(backend, q, truth[kind], embeddings, wide=kind == "text") for kind, q in queries.items()}


def filtered_ms(backend, embeddings: Embeddings, queries: np.ndarray) -> float:
    """Median time of a top-50 restricted to the three largest species (exact in both backends)."""
    taxa, counts = np.unique(embeddings.taxon_ids, return_counts=True)
    species = taxa[np.argsort(-counts)[:3]].tolist()
    times, _ = timed(lambda query: backend.search(query, k=K, taxon_ids=species), queries[:20])
    return percentile(times, 50)


def excluding_ms(backend, embeddings: Embeddings, queries: np.ndarray, count: int = 20_000) -> float:
    """Median time of a top-50 leaving out `count` images (a query's labels, for a ranking that learns)."""
    rng = np.random.default_rng(1)
    excluded = rng.choice(embeddings.image_ids, size=count, replace=False).tolist()
    times, _ = timed(lambda query: backend.search(query, k=K, exclude_image_ids=excluded), queries[:10])
    return percentile(times, 50)


def fetch_ms(backend, embeddings: Embeddings, repeats: int = 5) -> float:
    """Median time to fetch 1,000 scattered images' vectors."""
    rng = np.random.default_rng(0)
    times, _ = timed(
        lambda ids: backend.fetch(ids),
        [rng.choice(embeddings.image_ids, size=1000, replace=False) for _ in range(repeats)],
    )
    return percentile(times, 50)


class Every:
    """A load's progress, logged every `seconds`."""

    def __init__(self, seconds: float, name: str):
        self.seconds, self.name, self.last = seconds, name, time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if time.perf_counter() - self.last > self.seconds:
            self.last = time.perf_counter()
            log(f"milvus {self.name}: {done:,} of {total:,} loaded")


def bench(args) -> dict:
    from search import milvus

    work = Path(args.workdir)
    embeddings, queries = make_world(
        "realistic", args.n, args.dim, work / f"realistic-{args.n}x{args.dim}", 0, args.queries
    )
    log("exact ground truth")
    truth = {kind: exact_truth(embeddings.vectors, q, K) for kind, q in queries.items()}
    result: dict = {"n": args.n, "dim": args.dim, "queries": args.queries, "load_before": os.getloadavg()}

    started = time.perf_counter()
    flat = FaissVectors(search_index.Searcher(embeddings, search_index.build(embeddings, "flat")))
    result["faiss flat"] = {
        "build_s": time.perf_counter() - started,
        **per_query_type(flat, queries, truth, embeddings),
    }
    result["faiss flat"]["filtered_ms"] = filtered_ms(flat, embeddings, queries["image"])
    result["faiss flat"]["fetch_1000_ms"] = fetch_ms(flat, embeddings)
    result["faiss flat"]["exclude_20000_ms"] = excluding_ms(flat, embeddings, queries["image"])
    log(f"faiss flat: {result['faiss flat']}")
    del flat

    if args.n >= 20_000:
        started = time.perf_counter()
        index = search_index.build(embeddings, "fastscan")
        fast = FaissVectors(search_index.Searcher(embeddings, index, labels="image_ids"))
        result["faiss fastscan"] = {
            "build_s": time.perf_counter() - started,
            **per_query_type(fast, queries, truth, embeddings),
        }
        log(f"faiss fastscan: {result['faiss fastscan']}")
        del fast, index

    for index_type in args.indexes:
        folder = work / f"milvus-{index_type}-{args.n}"
        shutil.rmtree(folder, ignore_errors=True)
        folder.mkdir(parents=True)
        settings.QUIRE_MILVUS_URI = str(folder / "vectors.db")
        started = time.perf_counter()
        loaded = milvus.load_store(MODEL, embeddings, index_type=index_type, progress=Every(30, index_type))
        load_s = time.perf_counter() - started
        backend = milvus.open_collection(MODEL, store_dim=args.dim)
        entry = {
            "load_s": load_s,
            "rows_per_s": loaded.total / load_s,
            "disk_bytes_per_vector": sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / args.n,
            **per_query_type(backend, queries, truth, embeddings),
            "filtered_ms": filtered_ms(backend, embeddings, queries["image"]),
            "fetch_1000_ms": fetch_ms(backend, embeddings),
            "exclude_20000_ms": excluding_ms(backend, embeddings, queries["image"]),
        }
        result[f"milvus {index_type}"] = entry
        log(f"milvus {index_type}: {entry}")
        backend.close()
        if not args.keep:
            shutil.rmtree(folder, ignore_errors=True)
    result["load_after"] = os.getloadavg()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--n", type=int, default=1_000_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--indexes", nargs="+", default=["FLAT", "IVF_FLAT"])
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "quire-bench"))
    parser.add_argument("--keep", action="store_true", help="keep the Milvus Lite files")
    args = parser.parse_args()
    settings.configure(QUIRE_MILVUS_URI="", QUIRE_MILVUS_TOKEN="", QUIRE_MILVUS_TIMEOUT=60.0, QUIRE_MILVUS_INDEX="FLAT")
    result = bench(args)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"milvus-{args.n}x{args.dim}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
