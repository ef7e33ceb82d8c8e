"""Benchmark: the Milvus backend beside FAISS, in the same run, on embeddings shaped like CLIP's.

The realistic world of bench/realistic.py (the store is made once under --workdir and reused), searched through
Quire's own backends (search/backends.py), so each figure includes what Quire does around the engine:
  faiss flat       exact, the float16 store scanned in place (Quire's Searcher): the baseline and the truth
  faiss fastscan   the default above 250k images (IVF, RaBitQ fast-scan codes, exact re-scoring)
  milvus <INDEX>   each index type asked for, loaded with `load_store` (which waits until the server has indexed
                   it) and searched at Quire's breadths (search/milvus.py): narrow for image queries, wide for
                   text queries, across the modality gap
For each: the load-and-index time, top-50 p50/p95 and recall@50 per query type; a species-filtered search;
fetching 1,000 images' vectors (what the feedback ranking reads of its labels); a search leaving 20,000 labeled
images out. On a server (--server starts Milvus 2.3.5 standalone from PyPI's `milvus` package, bench/milvus_server.py;
--uri names one already running) each index type is also read at fixed breadths (SWEEPS: nprobe, ef, IVF_PQ's
re-scored candidates), image and text queries alike, which is how Quire's breadths were chosen. Without either,
Milvus Lite: one file per index type (it answers every nprobe alike, so no sweep). Everything runs on the same
cores as Quire: it measures Quire's code and Milvus's indexes here, not a cluster on machines of its own.

Usage:
  .venv/bin/python bench/milvus_bench.py [--n 1000000] [--dim 1024] [--queries 40] [--indexes FLAT IVF_FLAT]
      [--server | --uri http://host:19530] [--workdir DIR] [--skip-faiss]
Writes a JSON summary to bench/results/milvus-{lite,server}-NxDIM.json and stdout's last line; progress on stderr.
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


# Breadths measured beside Quire's own (search/milvus.py), on a server: Milvus Lite answers every nprobe alike.
SWEEPS = {
    "IVF_FLAT": [{"nprobe": n} for n in (16, 32, 64, 128, 256)],
    "IVF_SQ8": [{"nprobe": n} for n in (32, 64, 128, 256)],
    "IVF_PQ": [{"nprobe": n, "candidates": c} for n in (64, 128) for c in (66, 1000, 2500)],
    "HNSW": [{"ef": n} for n in (66, 128, 256, 512)],  # ef at least k (66: the page of 50 and Quire's margin)
    "AUTOINDEX": [{}, *({"ef": n} for n in (66, 128, 256, 512))],
}


def sweep(backend, index_type: str, queries, truth, embeddings) -> list[dict]:
    """recall@50 and p50 of image and text queries at fixed breadths (both read at the same breadth)."""
    from search import milvus

    chosen, asked = milvus.search_params, milvus.candidates
    rows = []
    for breadth in SWEEPS.get(index_type, []):
        params = {key: value for key, value in breadth.items() if key != "candidates"}
        milvus.search_params = lambda *_, params=params, **__: {"metric_type": "IP", "params": params}
        if "candidates" in breadth:
            milvus.candidates = lambda _type, limit, _wide, count=breadth["candidates"]: max(limit, count)
        try:
            rows.append({"breadth": breadth, **per_query_type(backend, queries, truth, embeddings)})
        finally:
            milvus.search_params, milvus.candidates = chosen, asked
        log(f"  {index_type} {rows[-1]}")
    return rows


class Every:
    """A load's progress, logged every `seconds`."""

    def __init__(self, seconds: float, name: str):
        self.seconds, self.name, self.last = seconds, name, time.perf_counter()

    def __call__(self, done: int, total: int) -> None:
        if time.perf_counter() - self.last > self.seconds:
            self.last = time.perf_counter()
            log(f"milvus {self.name}: {done:,} of {total:,} loaded")


def bench(args, server_uri: str | None) -> dict:

    work = Path(args.workdir)
    embeddings, queries = make_world(
        "realistic", args.n, args.dim, work / f"realistic-{args.n}x{args.dim}", 0, args.queries
    )
    log("exact ground truth")
    truth = {kind: exact_truth(embeddings.vectors, q, K) for kind, q in queries.items()}
    result: dict = {
        "n": args.n, "dim": args.dim, "queries": args.queries, "load_before": os.getloadavg(),
        "milvus": "Milvus Lite" if server_uri is None else f"server at {server_uri}",
    }  # fmt: skip
    if server_uri:
        settings.QUIRE_MILVUS_URI = server_uri

    if args.skip_faiss:
        return milvus_part(args, server_uri, embeddings, queries, truth, result)
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

    return milvus_part(args, server_uri, embeddings, queries, truth, result)


def milvus_part(args, server_uri, embeddings, queries, truth, result) -> dict:
    from search import milvus

    work = Path(args.workdir)
    for index_type in args.indexes:
        folder = work / f"milvus-{index_type}-{args.n}"
        if server_uri is None:  # Milvus Lite: a file per index type
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir(parents=True)
            settings.QUIRE_MILVUS_URI = str(folder / "vectors.db")
        started = time.perf_counter()
        loaded = milvus.load_store(
            MODEL, embeddings, index_type=index_type, rebuild=True, progress=Every(30, index_type),
            indexing=Every(30, f"{index_type} indexing"),
        )  # fmt: skip
        load_s = time.perf_counter() - started
        backend = milvus.open_collection(MODEL, store_dim=args.dim)
        entry = {
            "load_and_index_s": load_s,
            "rows_per_s": loaded.total / load_s,
            "indexed": loaded.indexed,
            "built": {key: str(value) for key, value in backend.built.items()},
            **per_query_type(backend, queries, truth, embeddings),
            "filtered_ms": filtered_ms(backend, embeddings, queries["image"]),
            "fetch_1000_ms": fetch_ms(backend, embeddings),
            "exclude_20000_ms": excluding_ms(backend, embeddings, queries["image"]),
        }
        if server_uri is None:
            entry["disk_bytes_per_vector"] = sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / args.n
        else:
            entry["breadths"] = sweep(backend, index_type, queries, truth, embeddings)
        result[f"milvus {index_type}"] = entry
        log(f"milvus {index_type}: {entry}")
        backend.close()
        if server_uri is None and not args.keep:
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
    parser.add_argument(
        "--server", action="store_true", help="start a Milvus standalone server (bench/milvus_server.py) and use it"
    )
    parser.add_argument("--uri", help="a Milvus server already running (http://host:19530)")
    parser.add_argument("--skip-faiss", action="store_true", help="measure Milvus only")
    args = parser.parse_args()
    settings.configure(
        QUIRE_MILVUS_URI="", QUIRE_MILVUS_TOKEN="", QUIRE_MILVUS_TIMEOUT=120.0, QUIRE_MILVUS_INDEX="FLAT"
    )
    if args.server:
        from bench import milvus_server

        with milvus_server.running(Path(args.workdir) / "milvus-server") as server:
            result = bench(args, server.uri)
    else:
        result = bench(args, args.uri)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    where = "server" if args.server or args.uri else "lite"
    (out / f"milvus-{where}-{args.n}x{args.dim}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
