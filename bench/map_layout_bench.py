"""Benchmark: the map's layout (search/layout.py) at several collection sizes, for its time, memory and slope.

Worlds from bench/realistic.py (clustered, anisotropic CLIP-shaped vectors, 1024-d), stored as a float16
memory-mapped array as the embedding store keeps them. For each size: the fit (PCA and openTSNE on
QUIRE_MAP_SAMPLE images, a fixed cost), the placing of every other image (linear) and the map's regions (k-means
on the positions, for the page's cluster hints), each timed, and the
process's peak RSS after the run. The baseline beside them, same run: reading the vectors once (the least any
layout must do). Also, with --compare: umap-learn, PaCMAP and openTSNE on the same sample (fit time, and how many
of each image's 10 nearest neighbours stay among its 10 nearest on the map), when they are installed.

Usage: .venv/bin/python bench/map_layout_bench.py [--sizes 100000 300000 1000000] [--sample 20000] [--compare]
"""

import argparse
import json
import resource
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import realistic  # noqa: E402

from search import layout  # noqa: E402


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def kept_neighbours(high: np.ndarray, low: np.ndarray, k: int = 10, probe: int = 2000) -> float:
    """The share of each probed image's k nearest neighbours (cosine, high-d) among its k nearest on the map."""
    rows = np.linspace(0, len(high) - 1, probe).astype(int)
    unit = high / np.linalg.norm(high, axis=1, keepdims=True)
    near_high = np.argsort(-(unit[rows] @ unit.T), axis=1)[:, 1 : k + 1]
    d = ((low[rows, None, :] - low[None, :, :]) ** 2).sum(axis=2)
    near_low = np.argsort(d, axis=1)[:, 1 : k + 1]
    return float(np.mean([len(set(a) & set(b)) / k for a, b in zip(near_high, near_low, strict=True)]))


def bench_size(count: int, sample: int, workdir: Path) -> dict:
    world = realistic.World.make(count, 1024, seed=0, shape="clip")
    vectors, _ = realistic.stored(world, workdir / f"clip-{count}")
    ids = np.arange(count, dtype=np.int64)
    started = time.perf_counter()
    total = 0.0
    for start in range(0, count, 100_000):  # the baseline: every vector read once, as placing reads them
        total += float(np.asarray(vectors[start : start + 100_000], dtype=np.float32)[:, 0].sum())
    read_s = time.perf_counter() - started
    started = time.perf_counter()
    fitted = layout.fit(vectors, ids, sample=sample)
    fit_s = time.perf_counter() - started
    started = time.perf_counter()
    placed = [layout.place(fitted, vectors[s : s + layout.PLACE_CHUNK]) for s in range(0, count, layout.PLACE_CHUNK)]
    place_s = time.perf_counter() - started
    started = time.perf_counter()
    layout.regions_of(np.concatenate(placed))
    regions_s = time.perf_counter() - started
    result = {
        "images": count,
        "sample": min(sample, count),
        "read_vectors_s": read_s,
        "fit_s": fit_s,
        "place_s": place_s,
        "place_us_per_image": place_s / count * 1e6,
        "regions_s": regions_s,
        "peak_rss_gb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6,
    }
    log(json.dumps(result))
    return result


def compare(sample: int) -> dict:
    world = realistic.World.make(sample, 1024, seed=1, shape="clip")
    vectors, _, _ = realistic.generate(sample, 1024, seed=1)
    high = np.asarray(vectors, dtype=np.float32)
    fitted = layout.Fit(high.mean(0), np.empty(0), np.empty(0), np.empty(0), np.empty(0))
    _, _, vt = np.linalg.svd(high[:5000] - fitted.mean, full_matrices=False)
    pca = (high - fitted.mean) @ vt[: layout.PCA_DIMS].T
    out = {}
    for name in ("openTSNE", "umap", "pacmap"):
        try:
            started = time.perf_counter()
            if name == "openTSNE":
                from openTSNE import TSNE  # each library only where it is compared

                low = np.asarray(TSNE(metric="cosine", n_jobs=-1, random_state=0).fit(pca))
            elif name == "umap":
                import umap  # as above

                low = umap.UMAP(metric="cosine").fit_transform(pca)
            else:
                import pacmap  # as above

                low = pacmap.PaCMAP(n_components=2).fit_transform(pca)
        except ImportError:
            out[name] = "not installed"
            continue
        out[name] = {"fit_s": time.perf_counter() - started, "neighbours_kept": kept_neighbours(pca, low)}
        log(f"{name}: {out[name]}")
    del world
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[100_000, 300_000, 1_000_000])
    parser.add_argument("--sample", type=int, default=20_000)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--workdir", default="/tmp/quire-map-bench")
    args = parser.parse_args()
    result: dict = {"sizes": [bench_size(n, args.sample, Path(args.workdir)) for n in args.sizes]}
    if args.compare:
        result["libraries"] = compare(args.sample)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "map_layout.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
