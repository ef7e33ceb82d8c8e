"""Scoring files from the command line without starting Django: `python -m evaluation --qrels ... --run ...`.

`manage.py evaluate` scores the same files the same way (and adds the database's labels and the model-made
runs); it shares this module's arguments and output. Starting Django is a third of its time on INQUIRE-sized
files (0.33 s of about 1 s: bench/eval_bench.py), and a researcher scoring a sweep of runs pays it per run.
Nothing here imports Django: evaluation.inputs, .report and .metrics are plain Python and numpy.
"""

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from common.files import write_atomically

from . import metrics as m
from .inputs import GroundTruth, InputError, Run, read_qrels, read_run
from .report import DEFAULT_METRICS, compare, evaluate, format_table, two_stage


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of scoring a run read from files (both commands)."""
    parser.add_argument(
        "--qrels", type=Path, help="INQUIRE annotations CSV or Quire labels CSV (default: the database's labels)"
    )
    parser.add_argument("--queries", type=Path, help="INQUIRE queries CSV: the query set and the grouping columns")
    parser.add_argument("--run", type=Path, help="TREC, CSV (query_id,image_id,score) or INQUIRE-Rerank file")
    parser.add_argument("--first-stage", type=Path, help="two-stage: rerank this run's top --top by --run's scores")
    parser.add_argument("--top", type=int, default=100, help="two-stage depth (default 100)")
    parser.add_argument("--compare", type=Path, help="a second run to compare with (per-query differences, p-value)")
    parser.add_argument("--protocol", choices=["fullrank", "rerank"], default="fullrank")
    parser.add_argument(
        "--k", type=int, help="cut-off (default 50 for fullrank; for rerank, each query's number of candidates)"
    )
    parser.add_argument(
        "--metrics", default=",".join(DEFAULT_METRICS), help=f"comma-separated, from {', '.join(m.METRICS)}"
    )
    parser.add_argument(
        "--normaliser",
        choices=m.NORMALISERS,
        help="AP normaliser: min = min(k, R), INQUIRE full-rank and ILIAS; r = plain AP, INQUIRE rerank; "
        "R = recall-weighted (default min for fullrank, r for rerank)",
    )
    parser.add_argument(
        "--ties",
        choices=m.TIES,
        default="average",
        help="tied scores: average = scikit-learn's, as INQUIRE's numbers (default); run-order = the file's order",
    )
    parser.add_argument(
        "--group-by", action="append", default=[], help="a queries-file column (repeatable), e.g. category"
    )
    parser.add_argument("--score-column", default="clip_score", help="score column of an INQUIRE-Rerank run")
    parser.add_argument("--json", type=Path, help="write the report as JSON (raw fractions in [0, 1])")
    parser.add_argument("--csv", type=Path, help="write the per-query table as CSV")


def run_from_file(path: Path | None, options: dict[str, Any], truth: GroundTruth) -> Run:
    """The run `--run` names (reranking `--first-stage`'s top `--top` when given)."""
    if path is None:
        raise ValueError("Give --run FILE (or, with manage.py evaluate, --from-model).")
    run = read_run(path, score_column=options["score_column"], queries=truth.queries)
    if options["first_stage"]:
        run = two_stage(read_run(options["first_stage"], queries=truth.queries), run, options["top"])
    return run


def score(truth: GroundTruth, runs: Callable[[Path | None], Run], options: dict[str, Any]) -> str:
    """Score the run (and `--compare`'s), write `--json` and `--csv`, and return the text to print.
    `runs(path)` reads the run at `path` (`--run`'s or `--compare`'s). Raises InputError or ValueError."""
    settings = {
        "protocol": options["protocol"],
        "k": options["k"],
        "normaliser": options["normaliser"],
        "ties": options["ties"],
    }
    names = [name.strip() for name in options["metrics"].split(",") if name.strip()]
    report = evaluate(truth, runs(options["run"]), metrics=names, **settings)
    other = (
        evaluate(truth, runs(options["compare"]), metrics=report.metrics, **settings) if options["compare"] else None
    )
    text = format_table(report, options["group_by"])
    text += "" if text.endswith("\n") else "\n"
    result = report.as_json(options["group_by"])
    if other:
        comparison = compare(report, other, "ap" if "ap" in report.metrics else report.metrics[0])
        result["comparison"] = comparison
        text += (
            f"\nvs {other.run}: {comparison['metric']} "
            f"{100 * comparison['mean_a']:.1f} vs {100 * comparison['mean_b']:.1f}, "
            f"better on {100 * comparison['improved']:.0f}% of {comparison['queries']} queries, worse on "
            f"{100 * comparison['worse']:.0f}%, paired permutation p = {comparison['p_value']:.4f}\n"
        )
    if options["json"]:
        write_atomically(options["json"], json.dumps(result, indent=2))
    if options["csv"]:
        write_atomically(options["csv"], report.per_query_csv())
    return text


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m evaluation",
        description="Score a ranked run against relevance labels from files, with the INQUIRE metrics "
        "(manage.py evaluate does the same, and scores the database's labels and model-made runs).",
    )
    add_arguments(parser)
    options = vars(parser.parse_args(argv))
    if options["qrels"] is None:
        parser.error("give --qrels FILE: the file-only scorer has no database to read labels from")
    try:
        truth = read_qrels(options["qrels"], options["queries"])
        text = score(truth, lambda path: run_from_file(path, options, truth), options)
    except (InputError, ValueError, OSError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    sys.stdout.write(text)
    return 0
