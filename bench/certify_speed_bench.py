"""Benchmark: what a completeness check's statistics cost, the tool's tail against the tail of before.

`certify`'s thinned tail (annotator/completeness/certify.py) sums the hypergeometric pmf over the counts a sample
may hold; since 2026-12-02 it reaches those terms from one of scipy's by their ratio (`_hypergeom_pmfs`) and calls
scipy's laws without freezing them. The baseline, measured in the same process on the same states, is the tail of
before (`tail_before`, verbatim): scipy's frozen laws and its pmf for every term (Boost's, about 8 microseconds).
Each operation is timed `--repeat` times both ways, alternating, and the medians are printed with their ratio;
every answer is compared (the decision and the bounds the same, p-values within 1e-9): a difference is an error.

The states are the level table's in bench/RESULTS.md (the simulator's first benchmark check at 10, 50 and 250
queries; a query's check at F = 46, U = 1,500), each at the tool's tolerance (checks.tolerance, for a query's
check or a benchmark's) and confidence (certify.tested_at(0.95, 1)), tested at the one fresh
look's pair_miss_rate(5%, 1 look, 0.25%). Per state: `check_size` (sizing the check, as a dry run or a draw does),
`claim` on meeting the tolerated count (what every answer about a finished check computes) and `can_certify`
(what each look at a check's pair asks).

  .venv/bin/python bench/certify_speed_bench.py                  # 5 repeats
  .venv/bin/python bench/certify_speed_bench.py --repeat 9 --json out.json
"""

import argparse
import json
import math
import os
import statistics
import sys
import time
from pathlib import Path
from unittest import mock

import numpy as np
from scipy.stats import binom, hypergeom

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")

import django  # noqa: E402  (needs ROOT on the path)

django.setup()  # checks's tolerance lives beside the models
from annotator.completeness import certify, checks  # noqa: E402

# (name, confirmed positives F, pairs drawn from U, benchmark?): bench/RESULTS.md's level table.
STATES = [
    ("one query (F 46, U 1,500)", 46, 1_500, False),
    ("10 queries (F 521, U 8,528)", 521, 8_528, True),
    ("50 queries (F 2,634, U 44,345)", 2_634, 44_345, True),
    ("250 queries (F 12,407, U 243,299)", 12_407, 243_299, True),
]
TARGET = 0.9


def tail_before(positives: int, unlabeled: int, missing: int, sample: int, miss_rate: float = 0.0) -> float:
    """The baseline: certify._lower_tail as it was before 2026-12-02 (git show 84fd785:annotator/completeness/
    certify.py), scipy's frozen laws and its pmf for every term."""
    law = hypergeom(unlabeled, missing, sample)
    if not miss_rate:
        return float(law.cdf(positives))
    first, last = max(0, sample - (unlabeled - missing)), min(sample, missing)
    cut = last if last - first < certify.WHOLE else last_counted_before(first, last, positives, miss_rate)
    if cut < first:
        return float(min(1.0, binom(first, 1.0 - miss_rate).cdf(positives)))
    held = np.arange(first, cut + 1)
    kept = float(np.sum(law.pmf(held) * binom(held, 1.0 - miss_rate).cdf(positives)))
    rest = float(binom(cut + 1, 1.0 - miss_rate).cdf(positives) * law.sf(cut)) if cut < last else 0.0
    return min(1.0, kept + rest)


def last_counted_before(first: int, last: int, positives: int, miss_rate: float) -> int:
    low, high = first - 1, last
    while low < high:
        middle = (low + high + 1) // 2
        if binom(middle, 1.0 - miss_rate).cdf(positives) >= certify.NEGLIGIBLE:
            low = middle
        else:
            high = middle - 1
    return low


def operations(found: int, unlabeled: int, benchmark: bool) -> dict:
    """Each operation of a state as a function of no arguments, returning its answer."""
    confidence = certify.tested_at(0.95, 1)
    miss = certify.pair_miss_rate(0.05, 1, 0.0025)
    tolerate = checks.tolerance(checks.BENCHMARK if benchmark else checks.QUERY, found, TARGET)
    size = certify.check_size(found, unlabeled, TARGET, confidence, miss, tolerate)
    return {
        "check_size": lambda: certify.check_size(found, unlabeled, TARGET, confidence, miss, tolerate),
        "claim": lambda: certify.claim(found, unlabeled, size, tolerate, TARGET, confidence, miss),
        "can_certify": lambda: certify.can_certify(found, unlabeled, size, 0, TARGET, confidence, miss),
    }


def same(answer: object, expected: object) -> bool:
    """The same decision and figures; p-values within 1e-9 of each other (the two sums round differently)."""
    if isinstance(answer, certify.Claim) and isinstance(expected, certify.Claim):
        return (answer.certified, answer.recall_lower_bound, answer.missing) == (
            expected.certified,
            expected.recall_lower_bound,
            expected.missing,
        ) and math.isclose(answer.p_value, expected.p_value, rel_tol=1e-9)
    return answer == expected


def timed(function) -> tuple[float, object]:
    start = time.perf_counter()
    answer = function()
    return time.perf_counter() - start, answer


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    if arguments.repeat < 1:
        parser.error("--repeat must be 1 or more")

    rows = []
    for name, found, unlabeled, benchmark in STATES:
        for operation, function in operations(found, unlabeled, benchmark).items():
            tool, baseline = [], []
            for _ in range(arguments.repeat):
                seconds, answer = timed(function)
                tool.append(seconds)
                with mock.patch.object(certify, "_lower_tail", tail_before):
                    seconds, expected = timed(function)
                baseline.append(seconds)
                if not same(answer, expected):
                    raise SystemExit(f"{name}, {operation}: the tool answers {answer!r}, before {expected!r}")
            row = {
                "state": name,
                "operation": operation,
                "tool_ms": 1000 * statistics.median(tool),
                "before_ms": 1000 * statistics.median(baseline),
            }
            row["speedup"] = row["before_ms"] / row["tool_ms"]
            rows.append(row)
            print(
                f"{name:36} {operation:12} {row['tool_ms']:9.1f} ms  before {row['before_ms']:9.1f} ms"
                f"  {row['speedup']:5.1f}x",
                flush=True,
            )
    if arguments.json:
        arguments.json.write_text(json.dumps({"repeat": arguments.repeat, "rows": rows}, indent=2))


if __name__ == "__main__":
    main()
