"""Benchmark: search at iNat24 scale, and the embedding pipeline against a bare forward pass.

Search (each figure beside exact FAISS flat search on the same data, same run):
  Generates N x D clustered unit vectors (default 5,000,000 x 1024, iNat24 at ViT-H/14 size) in
  the embedding store's own layout: 1,000 "genera" of 10 "species" each, images scattered around
  their species. Random uniform vectors would make every neighbour equally far and recall
  meaningless. Queries are held-out vectors drawn the same way.
    flat      FAISS IndexScalarQuantizer fp16, exact inner product (Quire's "flat" kind): the baseline
    fastscan  PCA + IVF + 4-bit fast-scan PQ (auto's kind above 250k), candidates re-scored exactly
    ivfpq     IVF (HNSW-assigned lists) + 8-bit PQ, candidates re-scored exactly (the previous kind)
  and the in-place update: 10,000 images taken out of the trained fast-scan index, then `update` adds
  them back (what an embedding job of 10,000 new images costs).
  Reports build time, index size, top-50 latency p50/p95 and recall@50 against the exact ranking
  (ground truth computed in blocks with numpy), and a species-filtered search over a ~5,000-image
  subset (Quire's exact subset ranking) beside FAISS flat search restricted by an IDSelector.

Embedding (--embedding): `search.pipeline.embed_files` (JPEG decoding in loader threads while the
  model runs) against `encode_pixels` on the same images preprocessed in advance, ViT-B-32 with
  random weights (no weights exist on this machine; throughput does not depend on their values).

Usage:
  .venv/bin/python bench/search_bench.py [--n 5000000] [--dim 1024] [--queries 200] [--workdir DIR]
  .venv/bin/python bench/search_bench.py --embedding [--images 256] [--model ViT-B-32]
Writes a JSON summary to stdout's last line and to bench/results/.
"""

import argparse
import gc
import json
import os
import resource
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from search import index as search_index  # noqa: E402
from search.store import EmbeddingStore  # noqa: E402

GENERA, SPECIES_PER_GENUS = 1000, 10
K = 50


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def species_centres(dim: int, rng) -> np.ndarray:
    genera = unit(rng.standard_normal((GENERA, dim), dtype=np.float32))
    offsets = unit(rng.standard_normal((GENERA * SPECIES_PER_GENUS, dim), dtype=np.float32))
    return unit(np.repeat(genera, SPECIES_PER_GENUS, axis=0) + 0.8 * offsets).astype(np.float32)


def draw(centres: np.ndarray, species: np.ndarray, rng) -> np.ndarray:
    """Images of the given species: cosine about 0.75 to their species centre (CLIP-like spread)."""
    noise = rng.standard_normal((len(species), centres.shape[1]), dtype=np.float32) * (0.9 / np.sqrt(centres.shape[1]))
    return unit(centres[species] + noise)


def generate(store: EmbeddingStore, n: int, dim: int, seed: int) -> np.ndarray:
    rng = np.random.default_rng(seed)
    centres = species_centres(dim, rng)
    vectors_path = store.directory / "vectors.npy"
    if vectors_path.exists() and len(np.load(store.directory / "image_ids.npy", mmap_mode="r")) == n:
        log(f"reusing {n:,} vectors in {store.directory}")
        return centres
    log(f"generating {n:,} x {dim} clustered vectors in {store.directory}")
    out = np.lib.format.open_memmap(vectors_path, mode="w+", dtype=np.float16, shape=(n, dim))
    # In the order `EmbeddingStore.consolidate` leaves a store: by taxon, then image id.
    taxa = np.sort(rng.integers(0, len(centres), size=n))
    for start in range(0, n, 200_000):
        stop = min(n, start + 200_000)
        out[start:stop] = draw(centres, taxa[start:stop], rng)
    out.flush()
    del out
    np.save(store.directory / "taxon_ids.npy", taxa.astype(np.int64))
    np.save(store.directory / "image_ids.npy", np.arange(1, n + 1, dtype=np.int64))
    return centres


def exact_truth(vectors: np.ndarray, queries: np.ndarray, k: int) -> np.ndarray:
    """Top-k rows for every query by a blockwise exact scan (numpy GEMM)."""
    best_scores = np.full((len(queries), k), -np.inf, dtype=np.float32)
    best_rows = np.zeros((len(queries), k), dtype=np.int64)
    for start in range(0, len(vectors), 200_000):
        block = vectors[start : start + 200_000].astype(np.float32)
        scores = queries @ block.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        merged_scores = np.concatenate([best_scores, np.take_along_axis(scores, top, axis=1)], axis=1)
        merged_rows = np.concatenate([best_rows, top + start], axis=1)
        keep = np.argsort(-merged_scores, axis=1)[:, :k]
        best_scores = np.take_along_axis(merged_scores, keep, axis=1)
        best_rows = np.take_along_axis(merged_rows, keep, axis=1)
    return best_rows


def timed(function, queries) -> tuple[list[float], list]:
    times, results = [], []
    for query in queries:
        started = time.perf_counter()
        results.append(function(query))
        times.append(1000 * (time.perf_counter() - started))
    return times, results


def percentile(values, q) -> float:
    return float(np.percentile(values, q))


def recall(results, truth_ids) -> float:
    return float(
        np.mean(
            [
                len({hit.image_id for hit in hits} & set(truth)) / len(truth)
                for hits, truth in zip(results, truth_ids, strict=True)
            ]
        )
    )


def index_size(folder: Path) -> int:
    info = json.loads((folder / "current.json").read_text())
    return (folder / info["file"]).stat().st_size


def bench_search(args) -> dict:
    import faiss

    faiss.omp_set_num_threads(os.cpu_count())
    work = Path(args.workdir)
    store = EmbeddingStore(work / "embeddings", "bench/synthetic", args.dim)
    centres = generate(store, args.n, args.dim, args.seed)
    embeddings = store.load()
    rng = np.random.default_rng(args.seed + 1)
    query_species = rng.integers(0, len(centres), size=args.queries)
    queries = draw(centres, query_species, rng).astype(np.float32)
    result = {"n": args.n, "dim": args.dim, "queries": args.queries, "k": K, "cpus": os.cpu_count()}

    log("exact ground truth")
    started = time.perf_counter()
    truth_rows = exact_truth(embeddings.vectors, queries, K)
    result["truth_seconds"] = time.perf_counter() - started
    truth_ids = [embeddings.image_ids[rows].tolist() for rows in truth_rows]

    built = {}
    for kind in ("flat", *args.kinds):
        folder = work / "indexes" / kind
        if kind != "flat" and kind in args.reuse and (folder / "current.json").exists():
            log(f"loading the {kind} index built by an earlier run (its build time is that run's)")
            index, _ = search_index.load(folder)
            built[kind] = index
            result[f"{kind}_index_bytes"] = index_size(folder)
            continue
        log(f"building {kind}")
        started = time.perf_counter()
        index = search_index.build(embeddings, kind)
        seconds = time.perf_counter() - started
        built[kind] = index
        result[f"{kind}_build_seconds"] = seconds
        if kind != "flat":  # the 10 GB flat index is the baseline only: not written
            search_index.save(index, folder, kind=kind, count=len(embeddings))
            result[f"{kind}_index_bytes"] = index_size(folder)
        log(f"{kind}: {seconds:.0f} s")

    flat = search_index.Searcher(embeddings, built["flat"])
    log("flat (exact) latency")
    flat_times, flat_results = timed(lambda q: flat.search(q, k=K), queries[: args.flat_queries])
    result["flat"] = {
        "p50_ms": percentile(flat_times, 50),
        "p95_ms": percentile(flat_times, 95),
        "recall": recall(flat_results, truth_ids[: len(flat_results)]),
        "queries": len(flat_times),
    }

    # Species filter: whole species until about 5,000 images.
    counts = np.bincount(embeddings.taxon_ids, minlength=len(centres))
    chosen, total = [], 0
    for species in rng.permutation(len(centres)):
        if total >= args.subset:
            break
        chosen.append(int(species))
        total += int(counts[species])
    rows = search_index.Searcher(embeddings, built["flat"]).rows_of_taxa(chosen)
    subset_queries = draw(centres, rng.choice(chosen, size=args.queries), rng).astype(np.float32)
    subset_truth = [
        embeddings.image_ids[
            rows[np.lexsort((embeddings.image_ids[rows], -(embeddings.vectors[rows].astype(np.float32) @ q)))[:K]]
        ].tolist()
        for q in subset_queries
    ]
    selector = faiss.IDSelectorBatch(rows.astype(np.int64))
    parameters = faiss.SearchParameters(sel=selector)
    base_times, base_results = timed(
        lambda q: built["flat"].search(q[None, :], K, params=parameters)[1][0], subset_queries[: args.flat_queries]
    )
    base_recall = float(
        np.mean(
            [
                len(set(embeddings.image_ids[r].tolist()) & set(t)) / K
                for r, t in zip(base_results, subset_truth[: len(base_results)], strict=True)
            ]
        )
    )
    # A deployment holds one index: the 10 GB flat one would push the store out of the page cache.
    built.pop("flat")
    flat = None  # drops the searcher's reference to the index
    gc.collect()

    for kind in args.kinds:
        result[kind] = []
        for nprobe in args.nprobe if kind == "ivfpq" else args.fastscan_nprobe:
            for rerank in args.rerank:
                searcher = search_index.Searcher(
                    embeddings, built[kind], nprobe=nprobe, rerank=rerank, labels=search_index.labels_of(kind)
                )

                def one(q, searcher=searcher):
                    return searcher.search(q, k=K)

                timed(one, queries[:10])  # warm the pages the lists touch
                times, results = timed(one, queries)
                entry = {
                    "nprobe": nprobe,
                    "rerank": rerank,
                    "p50_ms": percentile(times, 50),
                    "p95_ms": percentile(times, 95),
                    "recall": recall(results, truth_ids),
                }
                result[kind].append(entry)
                log(f"{kind}: {entry}")

    if "fastscan" in built:
        index, taken = built["fastscan"], embeddings.image_ids[rng.choice(len(embeddings), 10_000, replace=False)]
        index.remove_ids(faiss.IDSelectorBatch(taken))
        started = time.perf_counter()
        changes = search_index.update(index, {"kind": "fastscan", "trained_on": len(embeddings)}, embeddings)
        result["fastscan_update_10k_seconds"] = time.perf_counter() - started
        assert changes == (10_000, 0), changes
        log(f"fastscan update of 10,000 images: {result['fastscan_update_10k_seconds']:.1f} s")

    searcher = search_index.Searcher(embeddings, built[args.kinds[0]], labels=search_index.labels_of(args.kinds[0]))
    timed(lambda q: searcher.search(q, k=K, taxon_ids=chosen), subset_queries[:10])
    times, results = timed(lambda q: searcher.search(q, k=K, taxon_ids=chosen), subset_queries)
    result["filtered"] = {
        "subset_images": int(len(rows)),
        "species": len(chosen),
        "p50_ms": percentile(times, 50),
        "p95_ms": percentile(times, 95),
        "recall": recall(results, subset_truth),
        "flat_idselector_p50_ms": percentile(base_times, 50),
        "flat_idselector_p95_ms": percentile(base_times, 95),
        "flat_idselector_recall": base_recall,
    }
    log(f"filtered: {result['filtered']}")
    result["peak_rss_gb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    return result


def bench_embedding(args) -> dict:
    import torch
    from PIL import Image as PILImage

    from search.clip import ClipEmbedder, ClipSpec
    from search.pipeline import ImageFile, embed_files

    torch.set_num_threads(os.cpu_count())
    folder = Path(tempfile.mkdtemp(prefix="quire-embed-bench-"))
    rng = np.random.default_rng(0)
    files = []
    for image_id in range(args.images):  # iNat24-sized JPEGs (500 px on the long side)
        pixels = rng.integers(0, 255, size=(375, 500, 3), dtype=np.uint8)
        pixels[:, :, image_id % 3] //= 2
        path = folder / f"{image_id}.jpg"
        PILImage.fromarray(pixels).save(path, quality=85)
        files.append(ImageFile(image_id, path, 0))
    embedder = ClipEmbedder(ClipSpec(args.model, ""), device="cpu")
    preprocessed = torch.stack([embedder.preprocess(PILImage.open(f.path).convert("RGB")) for f in files])
    batch = args.batch_size

    def bare():
        for start in range(0, len(files), batch):
            embedder.encode_pixels(preprocessed[start : start + batch])

    def pipeline():
        embed_files(embedder, files, batch_size=batch, loader_threads=args.loader_threads)

    bare()  # warm up
    runs = {"bare": [], "pipeline": []}
    for _ in range(args.repeat):
        for name, function in (("bare", bare), ("pipeline", pipeline)):
            started = time.perf_counter()
            function()
            runs[name].append(len(files) / (time.perf_counter() - started))
            log(f"{name}: {runs[name][-1]:.1f} images/s")
    bare_rate, pipeline_rate = statistics.median(runs["bare"]), statistics.median(runs["pipeline"])
    return {
        "model": args.model,
        "images": len(files),
        "batch_size": batch,
        "loader_threads": args.loader_threads,
        "bare_images_per_s": bare_rate,
        "pipeline_images_per_s": pipeline_rate,
        "ratio": pipeline_rate / bare_rate,
        "runs": runs,
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=5_000_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--flat-queries", type=int, default=20, help="queries for the slow exact baselines")
    parser.add_argument("--kinds", nargs="+", default=["fastscan", "ivfpq"], choices=["fastscan", "ivfpq"])
    parser.add_argument("--nprobe", type=int, nargs="+", default=[16, 32], help="ivfpq's")
    parser.add_argument("--fastscan-nprobe", type=int, nargs="+", default=[8, 16, 32])
    parser.add_argument("--rerank", type=int, nargs="+", default=[200, 500])
    parser.add_argument("--subset", type=int, default=5000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--workdir", default=str(Path(tempfile.gettempdir()) / "quire-search-bench"))
    parser.add_argument(
        "--reuse", nargs="*", default=[], help="kinds whose index an earlier run saved in --workdir to load, not build"
    )
    parser.add_argument("--embedding", action="store_true", help="benchmark the embedding pipeline instead")
    parser.add_argument("--images", type=int, default=256)
    parser.add_argument("--model", default="ViT-B-32")
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--loader-threads", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    result = bench_embedding(args) if args.embedding else bench_search(args)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    name = "embedding" if args.embedding else f"search_{args.n}x{args.dim}"
    (out / f"{name}.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
