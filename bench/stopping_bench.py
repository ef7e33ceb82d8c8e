"""Benchmark: does each stopping rule's "done" hold, and what does it cost (issue 39)?

Runs evaluation.certification over `--seeds` team worlds (each with `--per-kind` queries of every kind: hard, easy,
tiny R, two clusters, a near-duplicate crowd), every annotator wrong on `--noise` of the images, and prints per rule:
how many runs it stopped, the share of stops whose true recall held the target with its 95% Clopper-Pearson
interval, the median and lowest true recall at the stop, the median labels spent and the median ratio to an oracle
that stops exactly at the target; then the same per kind of query. All rules watch the same labeling, so the
figures are paired. The full runs go to `--json`.

  .venv/bin/python bench/stopping_bench.py --seeds 20 --json /tmp/stopping.json
"""

import argparse
import json
import os
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--per-kind", type=int, default=2)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--target", type=float, default=0.9)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--depth", type=int, default=0, help="frame depth; 0: the tool's default frame, frozen")
    parser.add_argument("--max-review", type=int, default=3000)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()

    import django

    django.setup()
    from evaluation import certification, worlds

    settings = certification.Settings(
        noise=arguments.noise, target=arguments.target, confidence=arguments.confidence, depth=arguments.depth,
        max_review=arguments.max_review,
    )  # fmt: skip
    started = time.perf_counter()
    chosen = [
        (seed, worlds.team_world(per_kind=arguments.per_kind, images=30_000, seed=seed))
        for seed in range(arguments.seeds)
    ]

    def progress(done: int, total: int) -> None:
        print(f"\r{done}/{total} runs, {time.perf_counter() - started:.0f} s", end="", file=sys.stderr, flush=True)

    result = certification.simulate(chosen, settings, progress=progress)
    print(file=sys.stderr)
    print(
        f"{len(result['runs'])} runs (noise {arguments.noise}, target {arguments.target}, confidence "
        f"{arguments.confidence}, frame depth {arguments.depth}), {time.perf_counter() - started:.0f} s"
    )
    print(certification.format_summary(result))
    by_kind = defaultdict(list)
    for run in result["runs"]:
        by_kind[run["kind"]].append(run)
    for kind, runs in by_kind.items():
        print(f"\n{kind} ({len(runs)} runs)")
        print(certification.format_summary(certification.summary(runs, settings)))
    if arguments.json:
        arguments.json.write_text(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
