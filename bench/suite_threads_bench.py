"""Benchmark: a sample of the test suite with one OpenMP/BLAS thread per process against the libraries' default.

Since 2026-12-02 tests/settings.py sets OMP_NUM_THREADS, OPENBLAS_NUM_THREADS and MKL_NUM_THREADS to 1 for every
test process and what it starts. The baseline is the libraries' default, a thread per core (torch's intra-op pool,
FAISS's and numpy's OpenBLAS), given here explicitly (the settings keep a value already set). Both run the same
sample of tests on `./dev test`'s workers (one per core and one more), alternating, `--repeat` times; the medians
of the wall times are printed with their ratio. A run that fails is an error: a faster run that fails proves
nothing.

The default sample is three files whose tests each embed a collection with the tiny CLIP model (the `labeling`
fixture) and search it, the work most of the suite repeats.

  .venv/bin/python bench/suite_threads_bench.py                       # 2 repeats
  .venv/bin/python bench/suite_threads_bench.py --repeat 3 --json out.json
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = [
    "tests/annotator/test_map_api.py",
    "tests/annotator/test_labeling_views.py",
    "tests/annotator/test_candidates_api.py",
]
VARIABLES = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")


def run(threads: int, tests: list[str], workers: int) -> float:
    """Wall seconds of one pytest run of `tests` with `threads` per library per process."""
    env = {**os.environ, **{variable: str(threads) for variable in VARIABLES}}
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", str(workers), *tests]
    start = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    took = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"the sample failed with {threads} thread(s):\n{done.stdout[-3000:]}")
    return took


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--repeat", type=int, default=2)
    parser.add_argument(
        "--workers", type=int, default=(os.cpu_count() or 1) + 1, help="test processes (./dev test's: a core's and one)"
    )
    parser.add_argument("--json", type=Path)
    parser.add_argument("tests", nargs="*", default=SAMPLE)
    arguments = parser.parse_args()
    cores = os.cpu_count() or 1
    times: dict[str, list[float]] = {"one thread": [], f"{cores} threads (the default)": []}
    for _ in range(arguments.repeat):
        for label, threads in (("one thread", 1), (f"{cores} threads (the default)", cores)):
            times[label].append(run(threads, arguments.tests, arguments.workers))
            print(f"{label}: {times[label][-1]:.1f} s", flush=True)
    medians = {label: statistics.median(values) for label, values in times.items()}
    one, default = medians.values()
    print(f"medians: one thread {one:.1f} s, the default {default:.1f} s: {one / default:.2f}x the time")
    if arguments.json:
        arguments.json.write_text(json.dumps({"tests": arguments.tests, "times": times, "medians": medians}) + "\n")


if __name__ == "__main__":
    main()
