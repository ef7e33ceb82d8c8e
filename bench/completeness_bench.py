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
  .venv/bin/python bench/completeness_bench.py --queries 10 --seeds 3 --through-api
  .venv/bin/python bench/completeness_bench.py --seeds 3 --through-api --claim query --ranking page --step 10
  .venv/bin/python bench/completeness_bench.py --queries 10 --seeds 20 --no-per-query --design fresh --whole-checks

`--through-api`: per seed, the benchmark claim (`--claim query`: each query's own, beside `per_query_claims`)
reached by a team that follows the advice through Quire's HTTP API
(bench/completeness_api.py, a process of its own: a live server over the same world, the same three people with the
same mistakes) beside the simulator's run of that world and seed, with the seed's yardsticks (the simulator's
collection oracle and valid clairvoyant floor: both read off the world, not off either team).
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

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
    parser.add_argument("--annotators", type=int, default=2, help="the reviewer, the second, and any further ones")
    parser.add_argument(
        "--ranking", choices=("learned", "page"), default="learned",
        help="what the reviewer labels: the simulator's learned ranking, or the candidates API's batches (page rules)",
    )  # fmt: skip
    parser.add_argument(
        "--window", choices=("judgments", "confirmed"), default="judgments",
        help="when a ranking reads dry: the tool's rule (10%% of the last 50 judgments relevant) or the simulator's "
        "rule before the comparison through the API (5%% confirmed)",
    )  # fmt: skip
    parser.add_argument(
        "--window-size", type=int, default=None,
        help="the judgments a ranking's yield is read over (default: the tool's advice's, 50)",
    )  # fmt: skip
    parser.add_argument(
        "--least-judged", type=int, default=None,
        help="the judgments a query has before its ranking may read dry, for the benchmark's claim (default: the "
        "tool's advice's, 175)",
    )  # fmt: skip
    parser.add_argument(
        "--query-least-judged", type=int, default=None,
        help="the same for each query's own claim (default: the tool's advice's, 150)",
    )  # fmt: skip
    parser.add_argument(
        "--quiet-from", type=int, default=0,
        help="a ranking also reads dry from this many judgments on when its last window holds no confirmed positive "
        "(measured, not the tool's rule; 0: off)",
    )  # fmt: skip
    parser.add_argument(
        "--step", type=int, default=0,
        help="the team reads the advice every this many labels of a page batch and stops a query's review there once "
        "it reads dry (the side pane's advice after each pause in saving; 0: once a batch of 50 is labeled)",
    )  # fmt: skip
    parser.add_argument(
        "--owed", choices=("looked", "drawn"), default="looked",
        help="after a query's failed check, label at least as many images as it looked at (the tool's advice) or as "
        "it drew (the advice before issue 62's last change), then until dry",
    )  # fmt: skip
    parser.add_argument(
        "--query-tolerate", type=int,
        help="the positives a query's own check is sized to tolerate meeting (the tool's: checks.TOLERATE, 3; 1 "
        "before issue 62, then 2)",
    )  # fmt: skip
    parser.add_argument(
        "--query-first-stage", type=float, default=0.0,
        help="a query's check as a double sampling plan: this share of its alpha to a first stage sized to certify on "
        "meeting none, the rest of the sample looked at only where it meets a positive (0: the tool's staged check)",
    )  # fmt: skip
    parser.add_argument(
        "--query-one-stage", action="store_true",
        help="a query's check in one stage, the whole sample deciding (the tool's until 2026-12-03; the tool's now: "
        "its first pairs certify on counting none, certify.staged_sizes)",
    )  # fmt: skip
    parser.add_argument(
        "--judged-dry", type=float, default=0.10,
        help="a ranking reads dry when at most this share of its window's judgments are relevant (the tool's: 0.10)",
    )  # fmt: skip
    parser.add_argument(
        "--after-failure", choices=("review", "advice", "redraw"), default="review",
        help="after a failed benchmark check: review the queries its sample met positives in, review each query while "
        "its window with the check's looks yields (the tool's advice), or draw again at once",
    )  # fmt: skip
    parser.add_argument(
        "--sizing", choices=("share", "misses", "larger"), default="share",
        help="a benchmark check's tolerance: a tenth of the misses the target allows (the tool's), from the positives "
        "the last windows expect (certify.tolerance_for_misses), or the larger of the two",
    )  # fmt: skip
    parser.add_argument(
        "--tolerate-share", type=int, default=None,
        help="a benchmark check tolerates this share of the misses the target allows: 10 a tenth (the tool's), 5 a "
        "fifth, 0 none (evaluation.benchmark_sim.Settings.tolerate_share)",
    )  # fmt: skip
    parser.add_argument(
        "--recheck", choices=("first", "estimate"), default="first",
        help="a benchmark re-check's tolerance: as any check's (the tool's), or what the failed check says the frames "
        "still hide (certify.hiding_estimate), never less",
    )  # fmt: skip
    parser.add_argument(
        "--whole-checks",
        action="store_true",
        help="look at every pair of a check (the benchmark's or a query's), as before: not decided once it has "
        "counted more than it may",
    )
    parser.add_argument(
        "--confirm-at-draw", action="store_true",
        help="the simulator's team confirms a query's positives only when a check is drawn, as before 2026-12-02 (its "
        "frames then came from unconfirmed labels); the tool's flow confirms them as labeled",
    )  # fmt: skip
    parser.add_argument(
        "--through-api", action="store_true", help="a claim (--claim) through the HTTP API beside the simulator"
    )
    parser.add_argument(
        "--coupled-draws", action="store_true",
        help="every check's sample is the first pairs of one pseudo-random order of the (query, image) pairs, the "
        "seed's and the check's (benchmark_sim.coupled_order), in the simulator and, with --through-api, on the "
        "server: the two draw the same pairs wherever their frames agree (common random numbers)",
    )  # fmt: skip
    parser.add_argument(
        "--claim", choices=("benchmark", "query"), default="benchmark",
        help="with --through-api: the claim the team works toward, the benchmark's or each query's own",
    )  # fmt: skip
    parser.add_argument("--json", type=Path)
    arguments = parser.parse_args()
    if arguments.through_api:
        if arguments.extend or arguments.pooled or arguments.expert_noise:
            parser.error("--through-api runs the tool's flow: no --extend, --pooled or --expert-noise beside it")
        if arguments.tolerate_share is not None:
            parser.error("--through-api sizes the benchmark's check as the tool does: no --tolerate-share beside it")
        through_api(arguments)
        return

    import django

    django.setup()
    from evaluation import benchmark_sim, worlds

    designs = ("fresh", "two") if arguments.design == "both" else (arguments.design,)
    results = {}
    for design in designs:
        options = settings(arguments, design)
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


def settings(arguments: argparse.Namespace, design: str) -> Any:
    """The simulator's settings the command line asks for (evaluation.benchmark_sim.Settings)."""
    from evaluation import benchmark_sim

    return benchmark_sim.Settings(
        noise=arguments.noise, expert_noise=arguments.expert_noise, target=arguments.target,
        confidence=arguments.confidence, extend=arguments.extend, design=design, pooled=arguments.pooled,
        after_failure=arguments.after_failure, annotators=arguments.annotators, window_rule=arguments.window,
        window=arguments.window_size or benchmark_sim.WINDOW, judged_dry=arguments.judged_dry,
        least_judged=arguments.least_judged or benchmark_sim.LEAST["benchmark"],
        query_least_judged=arguments.query_least_judged or benchmark_sim.LEAST["query"],
        ranking=arguments.ranking, sizing=arguments.sizing, recheck=arguments.recheck,
        curtail=not arguments.whole_checks, quiet_from=arguments.quiet_from, step=arguments.step,
        owed=arguments.owed, confirm_as_labeled=not arguments.confirm_at_draw,
        query_tolerate=benchmark_sim.QUERY_TOLERATE if arguments.query_tolerate is None else arguments.query_tolerate,
        first_stage_share=arguments.query_first_stage, coupled_draws=arguments.coupled_draws,
        staged=not arguments.query_one_stage,
        tolerate_share=(
            benchmark_sim.BENCHMARK_TOLERATE_SHARE if arguments.tolerate_share is None else arguments.tolerate_share
        ),
    )  # fmt: skip


def through_api(arguments: argparse.Namespace) -> None:
    """Each seed through the API (a child process) while this one runs the simulator on the same world and seed."""
    import django

    django.setup()
    from evaluation import benchmark_sim, worlds

    options = settings(arguments, "fresh")  # the tool's design: the team through the API has no other
    per_query = arguments.claim == "query"
    least = arguments.query_least_judged if per_query else arguments.least_judged
    rows = []
    for seed in range(arguments.first_seed, arguments.first_seed + arguments.seeds):
        child = subprocess.Popen(
            [sys.executable, str(Path(__file__).with_name("completeness_api.py")), "--queries", str(arguments.queries),
             "--median", str(arguments.median), "--seed", str(seed), "--noise", str(arguments.noise),
             "--annotators", str(arguments.annotators), "--step", str(arguments.step),
             "--least-judged", str(least or 0), "--claim", arguments.claim,
             *(["--coupled-draws"] if arguments.coupled_draws else []),
             *(["--one-stage"] if arguments.query_one_stage else [])],
            stdout=subprocess.PIPE, text=True,
        )  # fmt: skip
        world = worlds.inquire_world(queries=arguments.queries, median_positives=arguments.median, seed=seed)
        if per_query:
            simulated: Any = [{**r, "seed": seed} for r in benchmark_sim.per_query_claims(world, seed, options)]
        else:
            simulated = benchmark_sim.benchmark_claim(world, seed, options)
        out, _ = child.communicate()
        if child.returncode:
            raise SystemExit(f"seed {seed}: the run through the API failed (exit {child.returncode})")
        api = json.loads(out.strip().splitlines()[-1])
        rows.append({"seed": seed, "api": api, "simulator": simulated})
        print(query_row(rows[-1]) if per_query else api_row(rows[-1]), flush=True)
        if arguments.json:  # after every seed: a long run that is stopped keeps what it measured
            arguments.json.write_text(json.dumps(rows, indent=2, default=float) + "\n")
    print(query_summary(rows) if per_query else api_summary(rows))


def with_least(row: dict) -> tuple[list[dict], list[dict]]:
    """A seed's per-query records through the API and in the simulator, each with "least": its query's least valid
    floor, read off the simulator's record (the yardstick is the world's, not either team's)."""
    from evaluation import benchmark_sim

    sim = [benchmark_sim._with_least(r) for r in row["simulator"]]
    least = {r["query_id"]: r["least"] for r in sim}
    return [{**r, "least": least[r["query_id"]]} for r in row["api"]["each_query"]], sim


def query_row(row: dict) -> str:
    """A seed's per-query claims through the API beside the simulator's, each over the least valid floor of the
    queries that have one (benchmark_sim's median_ratio_to_least_floor, per seed)."""
    from evaluation import benchmark_sim

    api, sim = with_least(row)

    def said(rows: list[dict]) -> str:
        certified = [r for r in rows if r["certified"]]
        labels = sum(r["labels"] for r in rows)
        return (
            f"{labels} labels, {sum(r['checks'] for r in rows)} checks, certified {len(certified)}/{len(rows)},"
            f" false {sum(not r['held'] for r in certified)}, {benchmark_sim._to_floor(rows, 'least'):.3f}x least floor"
        )

    api_labels, sim_labels = (sum(r["labels"] for r in rows) for rows in (api, sim))
    return f"seed {row['seed']}: API {said(api)} | simulator {said(sim)} | API/simulator {api_labels / sim_labels:.2f}"


def query_summary(rows: list[dict]) -> str:
    import statistics

    from evaluation import benchmark_sim

    sides = [with_least(row) for row in rows]
    api = [benchmark_sim._to_floor(each, "least") for each, _ in sides]
    sim = [benchmark_sim._to_floor(each, "least") for _, each in sides]
    return (
        f"{len(rows)} seeds, per-query claims: median over seeds of the labels over the least valid floor:"
        f" API {statistics.median(api):.3f}x ({', '.join(f'{a:.3f}' for a in api)}),"
        f" simulator {statistics.median(sim):.3f}x ({', '.join(f'{s:.3f}' for s in sim)})"
    )


def api_row(row: dict) -> str:
    api, sim = row["api"], row["simulator"]

    def per(value: float, yardstick: float | None) -> str:
        return f"{value / yardstick:.2f}x" if yardstick else "-"  # no valid floor: no check certifies at 0.9

    return (
        f"seed {row['seed']}: API {api['labels']} labels ({api['review']} review, {api['looks']} looks,"
        f" {api['adjudications']} adjudications; {api['draws']} draws, certified {api['certified']},"
        f" held {api['held']}, micro {api['micro_recall']:.3f}, stalled {api['stuck_rounds'] > 0})"
        f" | simulator {sim['labels']} ({sim['checks']} checks, certified {sim['certified']}, held {sim['held']},"
        f" stalled {sim['stuck']}) | API/simulator {api['labels'] / sim['labels']:.2f}"
        f" | floor {sim['floor']}: API {per(api['labels'], sim['floor'])}, simulator {per(sim['labels'], sim['floor'])}"
        f" | collection oracle {sim['oracle']}: API {per(api['labels'], sim['oracle'])},"
        f" simulator {per(sim['labels'], sim['oracle'])}"
    )


def api_summary(rows: list[dict]) -> str:
    import statistics

    def median(values: list[float]) -> str:
        return f"{statistics.median(values):.2f}"

    apis, sims = [r["api"] for r in rows], [r["simulator"] for r in rows]
    return (
        f"{len(rows)} seeds: API certified {sum(a['certified'] for a in apis)}, held {sum(a['held'] for a in apis)};"
        f" simulator certified {sum(s['certified'] for s in sims)}, held {sum(s['held'] for s in sims)}\n"
        f"median API/simulator {median([a['labels'] / s['labels'] for a, s in zip(apis, sims, strict=True)])},"
        f" API/floor {median([a['labels'] / s['floor'] for a, s in zip(apis, sims, strict=True) if s['floor']])},"
        f" simulator/floor {median([s['labels'] / s['floor'] for s in sims if s['floor']])},"
        f" API/collection oracle {median([a['labels'] / s['oracle'] for a, s in zip(apis, sims, strict=True)])},"
        f" simulator/collection oracle {median([s['labels'] / s['oracle'] for s in sims])}"
    )


if __name__ == "__main__":
    main()
