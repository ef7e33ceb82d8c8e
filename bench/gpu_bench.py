"""Benchmark: what a GPU gives Quire's embedding job and a query, each beside a baseline from the same run.

Runs on a machine with a CUDA GPU (the device tool's H100/H200); Quire's own code paths, no Django set-up:
  embedding   `search.pipeline.embed_files` (JPEG decoding in loader threads while the model runs, fp16 on the
              GPU as `search.clip.ClipEmbedder` chooses) beside the bare forward pass on the same images
              preprocessed in advance: the ratio says whether decoding keeps the GPU fed. ViT-H/14 at 224 px
              and at 378 px (the DFN5B model INQUIRE evaluated), random weights: no weights exist here, and
              throughput does not depend on their values. iNat24-sized JPEGs (500 x 375).
  text        one query's text embedding (what an annotator waits for on a new query), GPU beside CPU.
  exact scan  exact top-50 inner products over N x 1024 fp16 vectors on the GPU (torch matmul + topk), one
              query and a batch of 64, beside the bytes-read bound of the card (N x 1024 x 2 bytes at its
              measured copy bandwidth) and a 16-core CPU scan of the same vectors (numpy, fp32).

Usage (on the GPU machine; writes JSON to stdout's last line and --out):
  python3 bench/gpu_bench.py [--images 2048] [--n 5000000] [--out FILE]
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

from search.clip import ClipEmbedder  # noqa: E402
from search.pipeline import ImageFile, embed_files  # noqa: E402
from search.spec import ClipSpec  # noqa: E402

K = 50
# "cuda" for the measurement; --dry-run sets "cpu" to check the script here before spending device time.
DEVICE = "cuda"


def sync() -> None:
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def write_jpegs(count: int) -> list[ImageFile]:
    from PIL import Image as PILImage  # noqa: PLC0415  (only the embedding part needs Pillow's writer)

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


def bench_embedding(model: str, files: list[ImageFile], batch: int, threads: list[int], repeat: int) -> dict:
    from PIL import Image as PILImage  # noqa: PLC0415  (see write_jpegs)

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
    runs: dict[str, list[float]] = {"bare": []} | {f"pipeline_{t}": [] for t in threads}
    for _ in range(repeat):
        for name in runs:
            started = time.perf_counter()
            if name == "bare":
                bare()
            else:
                embed_files(embedder, files, batch_size=batch, loader_threads=int(name.split("_")[1]))
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


def bench_exact_scan(n: int, dim: int = 1024) -> dict:
    generator = torch.Generator(device=DEVICE).manual_seed(0)
    # Clustered unit vectors (1,000 centres), so top-50 is not a tie among equals.
    centres = torch.nn.functional.normalize(torch.randn(1000, dim, device=DEVICE, generator=generator), dim=1)
    vectors = torch.empty(n, dim, device=DEVICE, dtype=torch.float16)
    for start in range(0, n, 500_000):
        stop = min(n, start + 500_000)
        which = torch.randint(0, 1000, (stop - start,), device=DEVICE, generator=generator)
        rows = centres[which] + 0.6 * torch.randn(stop - start, dim, device=DEVICE, generator=generator) / dim**0.5
        vectors[start:stop] = torch.nn.functional.normalize(rows, dim=1).half()
    queries = torch.nn.functional.normalize(torch.randn(64, dim, device=DEVICE, generator=generator), dim=1).half()

    def scan(q: torch.Tensor) -> torch.Tensor:
        return torch.topk(vectors @ q.T, K, dim=0).indices

    def timed(q: torch.Tensor, count: int) -> float:
        for _ in range(3):
            scan(q)
        sync()
        times = []
        for _ in range(count):
            started = time.perf_counter()
            scan(q)
            sync()
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    one_ms, batch_ms = timed(queries[:1], 50), timed(queries, 20)
    # The card's copy bandwidth, measured now: the floor for a scan that reads every vector once.
    copy = torch.empty_like(vectors[: n // 4])
    sync()
    started = time.perf_counter()
    for _ in range(5):
        copy.copy_(vectors[: n // 4])
    sync()
    bandwidth = 5 * 2 * copy.numel() * 2 / (time.perf_counter() - started)
    del copy
    floor_ms = vectors.numel() * 2 / bandwidth * 1000
    on_cpu = vectors.float().cpu().numpy()
    query_cpu = queries[:1].float().cpu().numpy()
    cpu_times = []
    for _ in range(3):
        started = time.perf_counter()
        scores = on_cpu @ query_cpu[0]
        np.argpartition(-scores, K)[:K]
        cpu_times.append((time.perf_counter() - started) * 1000)
    return {
        "n": n,
        "dim": dim,
        "gpu_one_query_ms": one_ms,
        "gpu_batch64_ms": batch_ms,
        "gpu_batch64_ms_per_query": batch_ms / 64,
        "bandwidth_floor_ms": floor_ms,
        "copy_bandwidth_tb_s": bandwidth / 1e12,
        "cpu_one_query_ms": statistics.median(cpu_times),
        "cpu_threads": os.cpu_count(),
        "gpu_speedup_one_query": statistics.median(cpu_times) / one_ms,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2048)
    parser.add_argument("--batch-size", type=int, default=128)
    parser.add_argument("--threads", type=int, nargs="+", default=[8, 16])
    parser.add_argument("--models", nargs="+", default=["ViT-H-14", "ViT-H-14-378-quickgelu"])
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--n", type=int, default=5_000_000)
    parser.add_argument("--dry-run", action="store_true", help="tiny sizes on the CPU: check the script here first")
    parser.add_argument("--out", default=str(ROOT / "bench" / "results" / "gpu.json"))
    args = parser.parse_args()
    if args.dry_run:
        global DEVICE
        DEVICE = "cpu"
        args.images, args.n, args.models, args.repeat, args.threads = 16, 20_000, ["ViT-B-32"], 1, [2]
        args.batch_size = 8
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
    result["exact_scan"] = bench_exact_scan(args.n)
    if DEVICE == "cuda":
        torch.cuda.empty_cache()  # the scan's 10 GB of vectors are gone with its function's frame
    out.write_text(json.dumps(result, indent=2))  # after each part: a run cut short keeps what it measured
    log(f"exact scan: {result['exact_scan']}")
    files = write_jpegs(args.images)
    result["embedding"] = []
    for model in args.models:
        result["embedding"].append(bench_embedding(model, files, args.batch_size, args.threads, args.repeat))
        result["embedding"][-1]["text_ms_cpu"] = text_latency_cpu(model)
        if DEVICE == "cuda":
            torch.cuda.empty_cache()  # the model just measured is gone with its function's frame
        log(f"{model}: {json.dumps(result['embedding'][-1]['images_per_s'])}")
        out.write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
