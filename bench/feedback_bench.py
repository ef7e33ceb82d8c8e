"""Benchmark: from a batch of labels to the next 50 candidates with the `feedback` strategy, at iNat24 scale.

On the search benchmark's data (bench/search_bench.py: 5,000,000 x 1024 float16 store, IVF-PQ index,
built there or here), each trial takes a query vector, labels the top 2,000 images of its ranking
(about 10% relevant, as a hard query's first hours would leave them), then times what the candidates
API and the labeling page do after the last batch of 50 labels (search/engine.py's path):
  read the labeled images' vectors from the store, fit SeeSaw's logistic regression (feedback_vector),
  search the index with the fitted vector, excluding the labeled images, k = 50.
The vectors of the 1,950 earlier labels were read by the earlier batches, so they are in the page cache
(read once before timing); the last batch's 50 are read cold from the 10 GB memory-mapped store, as they
would be. `read_ms` is that part alone.
Beside it, in the same run: a plain vector search (today's text ranking without the text encoder), and
the fit alone. Reports p50 and p95 over the trials.

Usage:
  .venv/bin/python bench/feedback_bench.py [--workdir /tmp/quire-search-bench] [--trials 50] [--labels 2000]
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bench.search_bench import draw, generate, log, percentile  # noqa: E402
from search import engine, strategies  # noqa: E402
from search import index as search_index  # noqa: E402
from search.store import EmbeddingStore  # noqa: E402


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "quire-search-bench"))
    parser.add_argument("--n", type=int, default=5_000_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--trials", type=int, default=50)
    parser.add_argument("--labels", type=int, default=2000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    import faiss

    faiss.omp_set_num_threads(os.cpu_count())
    work = Path(args.workdir)
    store = EmbeddingStore(work / "embeddings", "bench/synthetic", args.dim)
    centres = generate(store, args.n, args.dim, args.seed)
    embeddings = store.load()
    folder = work / "indexes" / "ivfpq"
    if not (folder / "current.json").exists():
        log("building ivfpq (as bench/search_bench.py does; about 11 minutes at 5M)")
        started = time.perf_counter()
        search_index.save(search_index.build(embeddings, "ivfpq"), folder, kind="ivfpq", count=len(embeddings))
        log(f"built in {time.perf_counter() - started:.0f} s")
    index, _ = search_index.load(folder)
    searcher = search_index.Searcher(embeddings, index)
    loaded = engine._Loaded((0,), searcher)
    rng = np.random.default_rng(args.seed + 7)
    queries = draw(centres, rng.integers(0, len(centres), size=args.trials + 5), rng).astype(np.float32)

    plain, fit_only, feedback, reads = [], [], [], []
    for number, q in enumerate(queries):
        started = time.perf_counter()
        searcher.search(q, k=50)
        text_ms = 1000 * (time.perf_counter() - started)
        labeled = [hit.image_id for hit in searcher.search(q, k=args.labels)]
        relevant = set(rng.choice(labeled, size=len(labeled) // 10, replace=False).tolist())
        relevant_ids = [i for i in labeled if i in relevant]
        not_relevant_ids = [i for i in labeled if i not in relevant]
        engine._vectors_of(loaded, labeled[:-50])  # the earlier batches read these
        started = time.perf_counter()
        vectors_relevant = engine._vectors_of(loaded, relevant_ids)
        vectors_not = engine._vectors_of(loaded, not_relevant_ids)
        read_ms = 1000 * (time.perf_counter() - started)
        fit_started = time.perf_counter()
        vector = strategies.feedback_vector(q, vectors_relevant, vectors_not)
        fit_ms = 1000 * (time.perf_counter() - fit_started)
        hits = searcher.search(vector.astype(np.float32), k=50, exclude_image_ids=labeled)
        total_ms = 1000 * (time.perf_counter() - started)
        assert len(hits) == 50 and not {hit.image_id for hit in hits} & set(labeled)
        if number >= 5:  # the first few warm the store's pages and the index lists
            plain.append(text_ms)
            fit_only.append(fit_ms)
            reads.append(read_ms)
            feedback.append(total_ms)
    result = {
        "n": args.n,
        "dim": args.dim,
        "labels": args.labels,
        "trials": len(feedback),
        "cpus": os.cpu_count(),
        "plain_search": {"p50_ms": percentile(plain, 50), "p95_ms": percentile(plain, 95)},
        "read": {"p50_ms": percentile(reads, 50), "p95_ms": percentile(reads, 95)},
        "feedback_fit": {"p50_ms": percentile(fit_only, 50), "p95_ms": percentile(fit_only, 95)},
        "feedback_total": {"p50_ms": percentile(feedback, 50), "p95_ms": percentile(feedback, 95)},
        "ratio_p50": statistics.median(feedback) / statistics.median(plain),
    }
    log(json.dumps(result))
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / f"feedback-{time.strftime('%Y%m%d-%H%M%S')}.json").write_text(json.dumps(result, indent=1))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
