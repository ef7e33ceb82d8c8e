"""Benchmark: what each completeness claim costs a team, and does it hold (issue 51)?

Runs evaluation.benchmark_sim over `--seeds` INQUIRE-shaped worlds (`--queries` queries, positives lognormal with
median `--median`) with annotators wrong on `--noise` of the images and an adjudicator on `--expert-noise`: per seed
the benchmark's claim (one pooled check over every query's frame) and, unless `--no-per-query`, each query's own
claim, both reached the way the tool advises, everything counted, beside an oracle that stops each query at the
target. Prints the summary; the runs go to `--json`.

  .venv/bin/python bench/completeness_bench.py --queries 10 --seeds 20
  .venv/bin/python bench/completeness_bench.py --queries 250 --seeds 5 --no-per-query
  .venv/bin/python bench/completeness_bench.py --queries 250 --seeds 10 --first-seed 10 --no-per-query  # in parallel
  .venv/bin/python bench/completeness_bench.py --queries 10 --seeds 20 --no-per-query --extend 1.5
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--first-seed", type=int, default=0, help="seeds first-seed .. first-seed + seeds - 1")
    parser.add_argument("--median", type=float, default=46)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--expert-noise", type=float, default=0.0)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--no-per-query", action="store_true")
    parser.add_argument(
        "--extend", type=float, default=0.0, help="grow a failed benchmark check by this factor (nested samples)"
    )
    parser.add_argument(
        "--design", choices=("both", "fresh", "two"), default="both",
        help="how checks look at their samples: one fresh look (the tool), the two looks of before issue 62, or both "
        "on the same worlds and seeds (the default: each figure beside the old design's)",
    )  # fmt: skip
    parser.add_argument(
        "--pooled", action="store_true", help="the benchmark's pooled review rule (evaluation.benchmark_sim)"
    )
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()

    import django

    django.setup()
    from evaluation import benchmark_sim, worlds

    designs = ("fresh", "two") if arguments.design == "both" else (arguments.design,)
    results = {}
    for design in designs:
        options = benchmark_sim.Settings(
            noise=arguments.noise, expert_noise=arguments.expert_noise, target=arguments.target,
            confidence=arguments.confidence, extend=arguments.extend, design=design, pooled=arguments.pooled,
        )  # fmt: skip
        started = time.perf_counter()

        def chosen():
            for seed in range(arguments.first_seed, arguments.first_seed + arguments.seeds):
                yield (
                    seed,
                    worlds.inquire_world(queries=arguments.queries, median_positives=arguments.median, seed=seed),
                )

        def progress(done: int, total: int, design: str = design, started: float = started) -> None:
            print(f"\r{design}: {done}/{total} seeds, {time.perf_counter() - started:.0f} s", end="", file=sys.stderr,
                  flush=True)  # fmt: skip

        results[design] = benchmark_sim.simulate(
            chosen(), options, progress=progress, per_query=not arguments.no_per_query, total=arguments.seeds
        )
        print(file=sys.stderr)
        print(f"{design}: {arguments.queries} queries x {arguments.seeds} seeds, {time.perf_counter() - started:.0f} s")
        print(benchmark_sim.format_summary(results[design]))
        print(json.dumps({k: v for k, v in results[design].items() if not k.endswith("_runs")}, indent=2))
    if len(results) == 2:
        print(benchmark_sim.format_comparison(results["fresh"], results["two"]))
    if arguments.json:
        arguments.json.write_text(json.dumps(results, indent=2, default=float) + "\n")


if __name__ == "__main__":
    main()
