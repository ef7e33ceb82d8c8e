"""Benchmark: what sizing a query's check in two stages costs a draw and the side pane's cost, beside one stage.

A query's check is sized by `certify.staged_sizes` since 2026-12-03 (the one-stage sample, `certify.check_size`,
and the fewest first-stage pairs that keep the two stages within alpha, computed exactly): it runs at every draw
and whenever the side pane or the API's dry run shows the cost (checks.Situation.first_stage). The baseline, timed
in the same process on the same states, is `check_size` alone (what the cost computed before). Each state is timed
`--repeat` times both ways, alternating, with the module's caches cleared before each call (staged_sizes keeps its
answers: a frame's cost box shown again, and its draw, read them), and the medians are printed with their ratio.

The states are per-query frames from the simulator's range (F confirmed positives, U other images of the frame),
tested at the first check's confidence (certify.tested_at(0.95, 1)) and the one fresh look's pair_miss_rate (5%,
1 look, 0.25%), tolerating the tool's three; the small-F frames are the slowest (their sample is most of the
frame, so many counts certify and the level is read over many K).

  .venv/bin/python bench/staged_size_bench.py             # 5 repeats
  .venv/bin/python bench/staged_size_bench.py --repeat 9
"""

import argparse
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")

STATES = [(10, 500), (20, 800), (46, 1_500), (100, 3_000), (200, 5_000), (600, 12_000)]
TARGET = 0.9


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    arguments = parser.parse_args()

    import django

    django.setup()
    from annotator.completeness import certify

    confidence = certify.tested_at(0.95, 1)
    rate = certify.pair_miss_rate(0.05, 1, 0.0025)
    print("| F, U | first stage, sample | one stage (check_size) | two stages (staged_sizes) | ratio |")
    print("| --- | ---: | ---: | ---: | ---: |")
    for found, unlabeled in STATES:
        one, two = [], []
        staged = None
        for _ in range(arguments.repeat):
            for name, sized in (("one", certify.check_size), ("two", certify.staged_sizes)):
                certify.staged_sizes.cache_clear()
                certify._certifying.cache_clear()
                certify._boundaries.cache_clear()
                started = time.perf_counter()
                answer = sized(found, unlabeled, TARGET, confidence, rate, 3)
                (one if name == "one" else two).append(time.perf_counter() - started)
                staged = answer if name == "two" else staged
        first, whole = staged or (0, 0)
        a, b = statistics.median(one), statistics.median(two)
        times = f"{a * 1000:.1f} ms | {b * 1000:.1f} ms | {b / a:.1f}x"
        print(f"| {found}, {unlabeled:,} | {first:,}, {whole:,} | {times} |")


if __name__ == "__main__":
    main()
