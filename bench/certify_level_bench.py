"""Benchmark: does a completeness check hold at its stated level at the worst truth (issue 62)?

For the first benchmark check the simulator draws at 10, 50 and 250 INQUIRE-shaped queries (evaluation.benchmark_sim,
seed `--seed`: the confirmed positives F and the pairs U it is drawn from) and for a per-query check (F = 46,
U = 1,500), the chance that the tool's own `certify.claim` certifies a recall that is in truth under the target, at
the worst truth (the number K of missing positives, from the fewest that put recall under the target up, that makes
it largest). Two ways: exact enumeration over the draw and the looks, and a Monte Carlo of `--checks` checks
(hypergeometric draw, each sampled missing positive counted or lost by the looks), with its 95% Clopper-Pearson
interval. Every missing positive is one the review already judged not relevant (the population a check meets: a
median 96-100% of the misses in the simulator), so it gets exactly the fresh looks the design gives it. Populations:

  fresh       the tool since issue 62: one fresh look missing 5% of positives, the adjudicator rejecting 0.25% of
              those it finds; tested at pair_miss_rate(5%, 1 look, 0.25%)
  before      the check before issue 62: tested at 0.5% (two looks), but the review's "not relevant" was one of them,
              so a missing positive had one fresh look, lost 5% of the time
  estimated   fresh, each team's per-look bound estimated from `--looks` blind looks at a true 5% (the 95% Clopper-
              Pearson upper bound, as annotator.completeness.looks): the level over teams and checks
  correlated  fresh, the fresh look missing the review's misses 15% of the time (the hard images both miss): what the
              claim does not cover ("looks err independently"), measured
  staged      the per-query check in two stages (the tool since 2026-12-03: certify.staged_sizes), fresh; its first
              pairs certify on counting none; the exact level is the tool's own certify.staged_level_at
  staged_correlated  the same, with looks that err together as above

  .venv/bin/python bench/certify_level_bench.py                    # 10, 50 and 250 queries, 100,000 checks each
  .venv/bin/python bench/certify_level_bench.py --sizes 10 50 --checks 20000
"""

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")

TARGET, CONFIDENCE = 0.9, 0.95
PER_LOOK, ADJUDICATOR = 0.05, 0.0025


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs="*",
        default=[10, 50, 250],
        help="queries in each benchmark (none: the per-query check only)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--checks", type=int, default=100_000, help="Monte Carlo checks per state and population")
    parser.add_argument("--looks", type=int, default=200, help="blind looks a team's per-look bound is estimated from")
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()

    import django

    django.setup()
    from evaluation import benchmark_sim, worlds

    states = []
    for queries in arguments.sizes:
        started = time.perf_counter()
        world = worlds.inquire_world(queries=queries, median_positives=46, seed=arguments.seed)
        run = benchmark_sim.benchmark_claim(world, arguments.seed, benchmark_sim.Settings(max_checks=1))
        first = run["first_check"]
        print(f"{queries} queries: the simulator's first check at F = {first['found']:,}, U = "
              f"{first['sampled_from']:,} ({time.perf_counter() - started:.0f} s)", file=sys.stderr)  # fmt: skip
        states.append({"name": f"benchmark, {queries} queries", "found": first["found"], "U": first["sampled_from"]})
    states.append({"name": "one query", "found": 46, "U": 1500, "per_query": True})

    rng = np.random.default_rng([arguments.seed, 62])
    results = []
    for state in states:
        started = time.perf_counter()
        row = measure(state, arguments.checks, arguments.looks, rng)
        row["seconds"] = round(time.perf_counter() - started, 1)
        results.append(row)
        print(format_row(row))
    if arguments.json:
        arguments.json.write_text(json.dumps(results, indent=2) + "\n")


def measure(state: dict, draws: int, looks: int, rng: np.random.Generator) -> dict:
    from annotator.completeness import certify, checks

    found, unlabeled = state["found"], state["U"]
    tested = certify.tested_at(CONFIDENCE, 1)
    tolerate = checks.tolerance(checks.QUERY if state.get("per_query") else checks.BENCHMARK, found, TARGET)
    fresh = certify.pair_miss_rate(PER_LOOK, 1, ADJUDICATOR)
    truth = PER_LOOK + (1 - PER_LOOK) * ADJUDICATOR  # one fresh look at a review-missed positive, at the bound
    designs = {
        "fresh": (fresh, truth),
        "before": (0.005, truth),  # the review's "no" counted as a look: one fresh look left
        "correlated": (fresh, 0.15 + 0.85 * ADJUDICATOR),
    }
    row: dict = {"state": state["name"], "found": found, "U": unlabeled, "stated": round(1 - tested, 4)}
    for name, (rate, true_loss) in designs.items():
        check = Check(found, unlabeled, tested, rate, tolerate)
        worst, exact = check.worst(true_loss)
        level, low, high = check.monte_carlo(worst, true_loss, draws, rng)
        row[name] = {"sample": check.sample, "worst_missing": worst, "exact": round(exact, 5),
                     "monte_carlo": round(level, 5), "interval": [round(low, 5), round(high, 5)]}  # fmt: skip
    row["estimated"] = estimated_level(found, unlabeled, tested, tolerate, truth, draws, looks, rng)
    if state.get("per_query"):  # a query's check in two stages (the tool's since 2026-12-03)
        for name, true_loss in (("staged", truth), ("staged_correlated", designs["correlated"][1])):
            staged = StagedCheck(found, unlabeled, tested, fresh, tolerate)
            worst, exact = staged.worst(true_loss)
            level, low, high = staged.monte_carlo(worst, true_loss, draws, rng)
            row[name] = {"sample": staged.sample, "first_stage": staged.first, "worst_missing": worst,
                         "exact": round(exact, 6), "monte_carlo": round(level, 5),
                         "interval": [round(low, 5), round(high, 5)]}  # fmt: skip
    return row


class Check:
    """One check's design at one state: its sample and which counts certify, by the tool's own certify.claim."""

    def __init__(self, found: int, unlabeled: int, tested: float, rate: float, tolerate: int) -> None:
        from annotator.completeness import certify

        self.found, self.unlabeled, self.tested, self.rate = found, unlabeled, tested, rate
        self.sample = certify.check_size(found, unlabeled, TARGET, tested, rate, tolerate) or 0
        self.certifies: list[bool] = []
        for met in range(0, self.sample + 1):  # until the claims stop certifying (more met, more missing)
            said = certify.claim(found, unlabeled, self.sample, met, TARGET, tested, rate).certified
            self.certifies.append(said)
            if not said and met > tolerate + 5:
                break

    def certified(self, met: np.ndarray) -> np.ndarray:
        table = np.asarray(self.certifies + [False])
        return table[np.minimum(met, len(self.certifies))]

    def wrong(self, missing: int, true_loss: float) -> float:
        """P(certify and recall after the check < target | K = `missing`), exactly."""
        from scipy.stats import binom, hypergeom

        held = np.arange(0, min(self.sample, missing) + 1)
        drawn = hypergeom(self.unlabeled, missing, self.sample).pmf(held)
        met = np.arange(0, len(self.certifies) + 1)
        counted = drawn[:, None] * binom(held[:, None], 1 - true_loss).pmf(met[None, :])
        bad = self.certified(met) & ((self.found + met) / (self.found + missing) < TARGET)
        return float(counted.sum(axis=0) @ bad)

    def worst(self, true_loss: float) -> tuple[int, float]:
        from annotator.completeness import certify

        first = certify.missing_at_target(self.found, TARGET)
        best = (first, self.wrong(first, true_loss))
        for missing in range(first + 1, min(self.unlabeled, first + 400) + 1):
            chance = self.wrong(missing, true_loss)
            if chance > best[1]:
                best = (missing, chance)
            elif chance < best[1] / 10:
                break
        return best

    def monte_carlo(self, missing: int, true_loss: float, checks: int, rng: np.random.Generator) -> tuple:
        from scipy.stats import binomtest

        held = rng.hypergeometric(missing, self.unlabeled - missing, self.sample, size=checks)
        met = rng.binomial(held, 1 - true_loss)
        wrong = self.certified(met) & ((self.found + met) / (self.found + missing) < TARGET)
        count = int(wrong.sum())
        interval = binomtest(count, checks).proportion_ci(confidence_level=0.95, method="exact")
        return count / checks, interval.low, interval.high


class StagedCheck(Check):
    """A query's check in two stages at one state (certify.staged_sizes): the one-stage check's sample and test,
    its first pairs certifying on counting none."""

    def __init__(self, found: int, unlabeled: int, tested: float, rate: float, tolerate: int) -> None:
        from annotator.completeness import certify

        super().__init__(found, unlabeled, tested, rate, tolerate)
        staged = certify.staged_sizes(found, unlabeled, TARGET, tested, rate, tolerate)
        assert staged is not None and staged[1] == self.sample
        self.first = staged[0]

    def wrong(self, missing: int, true_loss: float) -> float:
        """P(certify wrongly | K = `missing`), exactly: the tool's own certify.staged_level_at."""
        from annotator.completeness import certify

        return certify.staged_level_at(
            self.found, self.unlabeled, self.first, self.sample, TARGET, self.tested, self.rate, missing, true_loss
        )

    def worst(self, true_loss: float) -> tuple[int, float]:
        """The worst K over the boundary of none counted and 400 past it, every K read (two stages, two peaks: a
        first stage errs most just past the boundary of none, the whole sample past that of its tolerance)."""
        from annotator.completeness import certify

        first = certify.missing_at_target(self.found, TARGET)
        chances = {
            missing: self.wrong(missing, true_loss) for missing in range(first, min(self.unlabeled, first + 400) + 1)
        }
        missing = max(chances, key=lambda k: chances[k])
        return missing, chances[missing]

    def monte_carlo(self, missing: int, true_loss: float, checks: int, rng: np.random.Generator) -> tuple:
        """Each check: the sample's count (hypergeometric draw, each held positive counted unless its looks lose
        it), the first stage's share of it (the counted positives lie at random places in the sample's order), a
        certificate where the first stage counts none (recall then the found's alone) or the whole count
        certifies by the tool's claim."""
        from scipy.stats import binomtest

        held = rng.hypergeometric(missing, self.unlabeled - missing, self.sample, size=checks)
        met = rng.binomial(held, 1 - true_loss)
        in_first = rng.hypergeometric(met, self.sample - met, self.first)
        by_first = in_first == 0
        whole_wrong = self.certified(met) & ((self.found + met) / (self.found + missing) < TARGET)
        wrong = np.where(by_first, self.found / (self.found + missing) < TARGET, whole_wrong)
        count = int(wrong.sum())
        interval = binomtest(count, checks).proportion_ci(confidence_level=0.95, method="exact")
        return count / checks, interval.low, interval.high


def estimated_level(found, unlabeled, tested, tolerate, truth, checks, looks, rng) -> dict:
    """The level over teams whose per-look bound is their own estimate: each Monte Carlo check is a team's (misses
    among `looks` blind looks at a true 5%), sized and tested at that team's bound, at the worst truth for the
    bound the true rate would give."""
    from annotator.completeness import certify

    misses = rng.binomial(looks, PER_LOOK, size=checks)
    designs: dict[int, Check] = {}
    reference = Check(found, unlabeled, tested, certify.pair_miss_rate(PER_LOOK, 1, ADJUDICATOR), tolerate)
    missing, _ = reference.worst(truth)
    wrong = 0
    for count in np.unique(misses):
        bound = certify.per_look_upper_bound(int(count), looks, 0.95)
        rate = certify.pair_miss_rate(min(bound, 0.5), 1, ADJUDICATOR)
        designs[int(count)] = check = Check(found, unlabeled, tested, rate, tolerate)
        teams = int((misses == count).sum())
        if not check.sample:
            continue
        level, _, _ = check.monte_carlo(missing, truth, teams, rng)
        wrong += round(level * teams)
    from scipy.stats import binomtest

    interval = binomtest(wrong, checks).proportion_ci(confidence_level=0.95, method="exact")
    return {"looks": looks, "worst_missing": missing, "monte_carlo": round(wrong / checks, 5),
            "interval": [round(interval.low, 5), round(interval.high, 5)],
            "median_sample": int(np.median([designs[int(c)].sample for c in misses[:1000]]))}  # fmt: skip


def format_row(row: dict) -> str:
    parts = [f"{row['state']} (F = {row['found']:,}, U = {row['U']:,}; stated level {row['stated']}):"]
    for name in ("fresh", "before", "estimated", "correlated", "staged", "staged_correlated"):
        if name not in row:
            continue
        got = row[name]
        exact = f"exact {got['exact']}, " if "exact" in got else ""
        parts.append(
            f"  {name:<10} real level {exact}Monte Carlo {got['monte_carlo']} "
            f"({got['interval'][0]}-{got['interval'][1]}), K = {got['worst_missing']}, "
            f"sample {got.get('sample', got.get('median_sample'))}"
            + (f", first stage {got['first_stage']}" if "first_stage" in got else "")
        )
    return "\n".join(parts)


if __name__ == "__main__":
    main()
