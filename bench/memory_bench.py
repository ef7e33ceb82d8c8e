"""Benchmark: the memory a search worker holds with the 5M index loaded, alone and four side by side.

Each worker process (as a gunicorn worker would) loads the saved index of --kind from the search
benchmark's --workdir and its float16 store (memory-mapped), then runs --queries unfiltered searches and
as many species-filtered ones. All workers then hold still while /proc/PID/smaps_rollup is read: RSS
(what `top` shows, counting shared pages in every process) and PSS (shared pages divided among the
processes that map them: what the machine really spends). Baseline in the same run: a bare worker
process that loaded nothing. Private_Dirty is the worker's own memory (the index, the id arrays);
Private_Clean and Shared_Clean are store pages it read, the page cache's, which any worker can share.

Usage: .venv/bin/python bench/memory_bench.py [--workers 4] [--kind fastscan] [--workdir DIR]
Run bench/search_bench.py first: it writes the store and the index this reads.
"""

import argparse
import json
import multiprocessing
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def rollup() -> dict:
    values = {}
    for line in Path("/proc/self/smaps_rollup").read_text().splitlines()[1:]:
        name, amount = line.split(":", 1)
        values[name] = int(amount.split()[0]) / 1024  # kB -> MB
    return {key: round(values[key], 1) for key in ("Rss", "Pss", "Shared_Clean", "Private_Clean", "Private_Dirty")}


def worker(workdir: str, kind: str, queries: int, load: bool, ready, hold, results) -> None:
    import numpy as np

    from search import index as search_index
    from search.store import EmbeddingStore

    if load:
        embeddings = EmbeddingStore(Path(workdir) / "embeddings", "bench/synthetic", 1024).load()
        index, info = search_index.load(Path(workdir) / "indexes" / kind)
        searcher = search_index.Searcher(embeddings, index, labels=info["labels"])
        rng = np.random.default_rng(multiprocessing.current_process().pid)
        for _ in range(queries):
            vector = embeddings.vectors[int(rng.integers(len(embeddings)))].astype(np.float32)
            searcher.search(vector, k=50)
            searcher.search(vector, k=50, taxon_ids=[int(rng.integers(10_000))])
    ready.put(True)
    hold.wait()
    results.put(rollup())


def measure(args, count: int, load: bool) -> list[dict]:
    context = multiprocessing.get_context("spawn")
    ready, results, hold = context.Queue(), context.Queue(), context.Event()
    processes = [
        context.Process(target=worker, args=(args.workdir, args.kind, args.queries, load, ready, hold, results))
        for _ in range(count)
    ]
    for process in processes:
        process.start()
    for _ in processes:
        ready.get()
    hold.set()  # every worker is loaded and still: read them together
    measured = [results.get() for _ in processes]
    for process in processes:
        process.join()
    return measured


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--kind", default="fastscan")
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "quire-search-bench"))
    args = parser.parse_args()
    result = {
        "baseline_bare_process": measure(args, 1, load=False)[0],
        "one_worker": measure(args, 1, load=True)[0],
        f"{args.workers}_workers": measure(args, args.workers, load=True),
        "kind": args.kind,
    }
    workers = result[f"{args.workers}_workers"]
    result["total_pss_mb"] = round(sum(w["Pss"] for w in workers), 1)
    result["total_rss_mb"] = round(sum(w["Rss"] for w in workers), 1)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
