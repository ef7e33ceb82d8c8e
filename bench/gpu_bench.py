"""Benchmark: what a GPU gives Quire's search, index builds and embedding job, each beside a baseline from the
same run.

Runs on a machine with a CUDA GPU (the device tool's H100/H200); Quire's own code paths, no Django set-up:
  search      `search.card.CardRanker` (the vectors on the card in fp16, ranked exactly in two passes) over
              N x 1024 clustered unit vectors: one query's top 50, a batch of 250 queries' top 1,000, and a
              species (5,000 rows) and a genus (100,000 rows) ranked exactly over their subset, each checked
              against the exact answer (recall 1.000 expected). Baselines: the bare matmul + topk on the card
              (what two passes cost beyond it), the bytes-read floor at the card's measured copy rate, and
              Quire's CPU path on the same machine (`search.index.Searcher` over the flat index).
  ivf         an IVF's k-means (the fast-scan index's training) through `search.index.card_clustering` (faiss-gpu)
              beside the CPU's, on the same sample; skipped, saying so, where FAISS here is the CPU wheel.
  embedding   `search.pipeline.embed_files` with decoding threads and with decoding processes
              (QUIRE_EMBED_LOADER_PROCESSES) beside the bare forward pass on the same images preprocessed in
              advance. ViT-H/14 at 224 px and at 378 px (INQUIRE's DFN5B), random weights (throughput does not
              depend on their values), fp16 as `search.clip.ClipEmbedder` chooses. iNat24-sized JPEGs (500 x 375).
  text        one query's text embedding (what an annotator waits for on a new query), GPU beside CPU.

Usage (on the GPU machine; writes JSON to stdout's last line and --out after each part):
  python3 bench/gpu_bench.py [--images 2048] [--n 1000000 5000000] [--out FILE]
  python3 bench/gpu_bench.py --dry-run     # tiny sizes on the CPU: check the script before spending device time
"""

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from search import index as search_index  # noqa: E402
from search.card import CardRanker  # noqa: E402
from search.clip import ClipEmbedder  # noqa: E402
from search.pipeline import ImageFile, embed_files  # noqa: E402
from search.spec import ClipSpec  # noqa: E402
from search.store import Embeddings  # noqa: E402

K = 50
# "cuda" for the measurement; --dry-run sets "cpu" to check the script here before spending device time.
DEVICE = "cuda"


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def write_jpegs(count: int) -> list[ImageFile]:
    from PIL import Image as PILImage  # only the embedding part needs Pillow's writer

    folder = Path(tempfile.mkdtemp(prefix="quire-gpu-bench-"))

    def one(image_id: int) -> ImageFile:
        rng = np.random.default_rng(image_id)
        # Smooth colour fields plus noise: closer to a photo's JPEG size and decode cost than pure noise.
        base = rng.integers(0, 255, size=(15, 20, 3), dtype=np.uint8)
        pixels = np.asarray(PILImage.fromarray(base).resize((500, 375), PILImage.BICUBIC), dtype=np.int16)
        pixels += rng.integers(-20, 20, size=pixels.shape, dtype=np.int16)
        path = folder / f"{image_id}.jpg"
        PILImage.fromarray(np.clip(pixels, 0, 255).astype(np.uint8)).save(path, quality=90)
        return ImageFile(image_id, path, 0)

    with ThreadPoolExecutor(os.cpu_count()) as pool:
        return list(pool.map(one, range(count)))


def bench_embedding(
    model: str, files: list[ImageFile], batch: int, threads: list[int], processes: list[int], repeat: int
) -> dict:
    from PIL import Image as PILImage  # see write_jpegs

    started = time.perf_counter()
    embedder = ClipEmbedder(ClipSpec(model, ""), device=DEVICE)
    load_s = time.perf_counter() - started
    with ThreadPoolExecutor(os.cpu_count()) as pool:
        pixels = list(pool.map(lambda f: embedder.preprocess(PILImage.open(f.path).convert("RGB")), files))
    preprocessed = torch.stack(pixels)
    if DEVICE == "cuda":
        preprocessed = preprocessed.pin_memory()

    def bare() -> None:
        for start in range(0, len(files), batch):
            embedder.encode_pixels(preprocessed[start : start + batch])

    bare()  # warm up (cuDNN / cuBLAS choose their kernels)
    runs: dict[str, list[float]] = (
        {"bare": []} | {f"threads_{t}": [] for t in threads} | {f"processes_{p}": [] for p in processes}
    )
    for _ in range(repeat):
        for name in runs:
            started = time.perf_counter()
            if name == "bare":
                bare()
            elif name.startswith("threads_"):
                embed_files(embedder, files, batch_size=batch, loader_threads=int(name.split("_")[1]))
            else:
                embed_files(embedder, files, batch_size=batch, loader_processes=int(name.split("_")[1]))
            runs[name].append(len(files) / (time.perf_counter() - started))
            log(f"{model} {name}: {runs[name][-1]:.0f} images/s")
    medians = {name: statistics.median(rates) for name, rates in runs.items()}
    text_gpu = text_latency(embedder)
    return {
        "model": model,
        "image_size": int(preprocessed.shape[-1]),
        "batch_size": batch,
        "load_s": load_s,
        "images_per_s": medians,
        "ratio_to_bare": {name: rate / medians["bare"] for name, rate in medians.items()},
        "hours_for_5M": {name: 5_000_000 / rate / 3600 for name, rate in medians.items()},
        "text_ms_gpu": text_gpu,
        "runs": runs,
    }


def text_latency(embedder: ClipEmbedder, count: int = 30) -> float:
    """Median ms of one new query's text embedding (the cache is bypassed: every text is new)."""
    times = []
    for i in range(count + 3):
        started = time.perf_counter()
        embedder.encode_text([f"a hermit crab using plastic trash as its shell, variant {i}"])
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times[3:])


def text_latency_cpu(model: str) -> float:
    torch.set_num_threads(os.cpu_count() or 1)
    embedder = ClipEmbedder(ClipSpec(model, ""), device="cpu")
    return text_latency(embedder, count=10)


def clustered(n: int, dim: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(fp16 unit vectors, their taxa, 250 text-like queries): 1,000 clusters of about n / 1,000 rows, each
    cluster one taxon; the queries sit off the clusters (a modality gap) so that their best images are spread."""
    generator = torch.Generator(device=DEVICE).manual_seed(seed)
    centres = torch.nn.functional.normalize(torch.randn(1000, dim, device=DEVICE, generator=generator), dim=1)
    vectors = np.empty((n, dim), dtype=np.float16)
    taxa = np.empty(n, dtype=np.int64)
    for start in range(0, n, 500_000):
        stop = min(n, start + 500_000)
        which = torch.randint(0, 1000, (stop - start,), device=DEVICE, generator=generator)
        rows = centres[which] + 0.6 * torch.randn(stop - start, dim, device=DEVICE, generator=generator) / dim**0.5
        vectors[start:stop] = torch.nn.functional.normalize(rows, dim=1).half().cpu().numpy()
        taxa[start:stop] = which.cpu().numpy()
    order = np.argsort(taxa, kind="stable")  # the store is taxon-ordered, as Quire writes it
    shared = torch.nn.functional.normalize(torch.randn(1, dim, device=DEVICE, generator=generator), dim=1)
    picked = centres[torch.randint(0, 1000, (250,), device=DEVICE, generator=generator)]
    queries = torch.nn.functional.normalize(0.35 * picked + 0.8 * shared, dim=1).cpu().numpy().astype(np.float32)
    return vectors[order], taxa[order], queries


def timed_ms(run, count: int, warm: int = 3) -> float:
    for _ in range(warm):
        run()
    sync()
    times = []
    for _ in range(count):
        started = time.perf_counter()
        run()
        sync()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def exact_top(vectors: np.ndarray, query: np.ndarray, k: int, rows: np.ndarray | None = None) -> set[int]:
    """The exact top k rows by fp32 inner product, in blocks on the CPU (the truth recall is measured against)."""
    rows = np.arange(len(vectors)) if rows is None else rows
    scores = np.concatenate(
        [vectors[rows[a : a + 1_000_000]].astype(np.float32) @ query for a in range(0, len(rows), 1_000_000)]
    )
    return set(rows[np.argpartition(-scores, k)[:k]].tolist())


def rows_of_first_taxa(taxa: np.ndarray, at_least: int) -> np.ndarray:
    """The rows of the first taxa (in id order) that hold at least `at_least` rows together: a filter's subset."""
    kinds, counts = np.unique(taxa, return_counts=True)
    enough = int(np.searchsorted(np.cumsum(counts), at_least)) + 1
    return np.flatnonzero(np.isin(taxa, kinds[:enough]))


def bench_card(vectors: np.ndarray, ids: np.ndarray, taxa: np.ndarray, queries: np.ndarray) -> dict:
    """Quire's ranking on the card: single, batched and filtered, with recall against the exact answer."""
    n = len(vectors)
    started = time.perf_counter()
    ranker = CardRanker(vectors, ids, DEVICE)
    sync()
    result: dict = {"to_card_s": time.perf_counter() - started}
    one = queries[:1]
    result["one_query_top50_ms"] = timed_ms(lambda: ranker.rank(one, K), 50)
    result["batch250_top1000_ms"] = timed_ms(lambda: ranker.rank(queries, 1000), 5, warm=1)
    result["batch250_per_query_ms"] = result["batch250_top1000_ms"] / len(queries)
    q16 = torch.as_tensor(one[0], device=ranker.device).half()
    result["bare_matmul_topk_ms"] = timed_ms(lambda: torch.topk(ranker.vectors @ q16, K), 50)
    # The card's copy bandwidth, measured now: the floor for a scan that reads every vector once.
    part = ranker.vectors[: max(1, n // 4)]
    target = torch.empty_like(part)
    copy_ms = timed_ms(lambda: target.copy_(part), 5, warm=1)
    result["bandwidth_floor_ms"] = copy_ms * n / len(part) / 2  # a copy reads and writes: twice the bytes
    result["filtered_ms"], result["filtered_rows"], recall = {}, {}, {}
    subsets = {"species": rows_of_first_taxa(taxa, min(5000, n // 10)), "genus": rows_of_first_taxa(taxa, n // 10)}
    for name, rows in subsets.items():
        result["filtered_rows"][name] = len(rows)
        result["filtered_ms"][name] = timed_ms(lambda rows=rows: ranker.rank(one, K, rows=rows), 20)
        found = ranker.rank(queries[:20], K, rows=rows)
        recall[name] = statistics.mean(
            len(set(got.tolist()) & exact_top(vectors, query, min(K, len(rows)), rows)) / min(K, len(rows))
            for (got, _), query in zip(found, queries[:20], strict=True)
        )
    recall["all"] = statistics.mean(
        len(set(got.tolist()) & exact_top(vectors, query, K)) / K
        for (got, _), query in zip(ranker.rank(queries[:10], K), queries[:10], strict=True)
    )
    result["recall_at_50"] = recall
    return result


def bench_search(n: int, dim: int = 1024, cpu_queries: int = 5) -> dict:
    vectors, taxa, queries = clustered(n, dim)
    ids = np.arange(1, n + 1, dtype=np.int64)
    result = {"n": n, "dim": dim} | bench_card(vectors, ids, taxa, queries)
    if DEVICE == "cuda":
        torch.cuda.empty_cache()  # the card's copy is gone with bench_card's frame
    embeddings = Embeddings(vectors, ids, taxa)
    started = time.perf_counter()
    cpu = search_index.Searcher(embeddings, search_index.build(embeddings, "flat"))
    result["cpu_flat_build_s"] = time.perf_counter() - started
    result["cpu_flat_one_query_ms"] = timed_ms(lambda: cpu.search(queries[0], k=K), cpu_queries, warm=1)
    result["cpu_threads"] = os.cpu_count()
    result["speedup_one_query"] = result["cpu_flat_one_query_ms"] / result["one_query_top50_ms"]
    return result


def bench_ivf_training(n: int = 1_000_000, dim: int = 1024) -> dict:
    """The fast-scan index's training (its IVF k-means) on the card beside the CPU's, on the same sample."""
    clustering = search_index.card_clustering(dim)
    if clustering is None:
        return {"skipped": "FAISS here is the CPU wheel (or sees no GPU): install faiss-gpu (requirements-gpu.txt)"}
    vectors, _, _ = clustered(n, dim, seed=1)
    factory = search_index._fastscan_factory(n, dim)
    nlist = search_index.faiss.extract_index_ivf(
        search_index.faiss.index_factory(dim, factory, search_index.faiss.METRIC_INNER_PRODUCT)
    ).nlist
    sample = np.ascontiguousarray(vectors[: min(n, max(50 * nlist, 20_000))], dtype=np.float32)
    times = {}
    for name, hook in (("gpu", clustering), ("cpu", None)):
        index = search_index.faiss.index_factory(dim, factory, search_index.faiss.METRIC_INNER_PRODUCT)
        search_index.faiss.extract_index_ivf(index).cp.niter = 10
        started = time.perf_counter()
        search_index._train(index, sample, hook)
        times[name] = time.perf_counter() - started
        log(f"ivf training on the {name}: {times[name]:.1f} s")
    return {"n_sample": len(sample), "nlist": nlist, "train_s": times, "speedup": times["cpu"] / times["gpu"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, nargs="+", default=[8])
    parser.add_argument("--processes", type=int, nargs="+", default=[8, 14])
    parser.add_argument("--models", nargs="+", default=["ViT-H-14", "ViT-H-14-378-quickgelu"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n", type=int, nargs="+", default=[1_000_000, 5_000_000])
    parser.add_argument("--skip", nargs="*", default=[], choices=["search", "ivf", "embedding"])
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU: check the script here first")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu.json"))
    args = parser.parse_args()
    if args.dry_run:
        global DEVICE
        DEVICE = "cpu"
        args.images, args.n, args.models, args.repeat, args.threads = 16, [20_000], ["ViT-B-32"], 1, [2]
        args.batch_size, args.processes = 8, [2]
    elif not torch.cuda.is_available():
        sys.exit("bench/gpu_bench.py needs a CUDA GPU (run it through the device tool); none is visible here.")
    result: dict = {
        "device": torch.cuda.get_device_name(0) if DEVICE == "cuda" else "cpu (dry run)",
        "torch": torch.__version__,
        "cpus": os.cpu_count(),
    }
    log(f"{result['device']}, torch {torch.__version__}, {os.cpu_count()} CPUs")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    if "search" not in args.skip:
        result["search"] = []
        for n in args.n:
            result["search"].append(bench_search(n, cpu_queries=3 if n > 1_000_000 else 5))
            if DEVICE == "cuda":
                torch.cuda.empty_cache()
            log(f"search at {n:,}: {json.dumps(result['search'][-1])}")
            out.write_text(json.dumps(result, indent=2))  # after each part: a run cut short keeps what it measured
    if "ivf" not in args.skip:
        result["ivf_training"] = bench_ivf_training(min(1_000_000, max(args.n)))
        log(f"ivf training: {result['ivf_training']}")
        out.write_text(json.dumps(result, indent=2))
    if "embedding" in args.skip:
        print(json.dumps(result))
        return
    files = write_jpegs(args.images)
    result["embedding"] = []
    for model in args.models:
        result["embedding"].append(
            bench_embedding(model, files, args.batch_size, args.threads, args.processes, args.repeat)
        )
        result["embedding"][-1]["text_ms_cpu"] = text_latency_cpu(model)
        if DEVICE == "cuda":
            torch.cuda.empty_cache()  # the model just measured is gone with its function's frame
        log(f"{model}: {json.dumps(result['embedding'][-1]['images_per_s'])}")
        out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
