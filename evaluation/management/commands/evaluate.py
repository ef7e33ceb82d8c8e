import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from common.files import write_atomically
from evaluation import metrics as m
from evaluation.inputs import GroundTruth, InputError, qrels_from_database, read_qrels, read_queries, read_run
from evaluation.report import DEFAULT_METRICS, compare, evaluate, format_table, two_stage
from evaluation.runs import METHODS, run_from_method
from search.facade import SearchUnavailable


class Command(BaseCommand):
    help = "Score a ranked run against relevance labels with the INQUIRE metrics (AP@k, nDCG@k, MRR, ...)."
    # Scoring files needs neither the URL configuration nor the models the system checks import (3 s of
    # start-up), and the model clients (the OpenAI client: 1 s) are imported only for --from-model
    # (bench/eval_bench.py).
    requires_system_checks = []

    def add_arguments(self, parser):
        parser.add_argument(
            "--qrels", type=Path, help="INQUIRE annotations CSV or Quire labels CSV (default: the database's labels)"
        )
        parser.add_argument("--queries", type=Path, help="INQUIRE queries CSV: the query set and the grouping columns")
        parser.add_argument("--run", type=Path, help="TREC, CSV (query_id,image_id,score) or INQUIRE-Rerank file")
        parser.add_argument(
            "--from-model", action="store_true", help="make the run with the configured CLIP model's search"
        )
        parser.add_argument(
            "--method",
            choices=METHODS,
            default="clip",
            help="with --from-model: the CLIP ranking, or a model-based system on its top --top (yesno, structured, "
            "judges, visret)",
        )
        parser.add_argument("--save-run", type=Path, help="with --from-model: also write the run as TREC")
        parser.add_argument("--first-stage", type=Path, help="two-stage: rerank this run's top --top by --run's scores")
        parser.add_argument("--top", type=int, default=100, help="two-stage depth (default 100)")
        parser.add_argument(
            "--compare", type=Path, help="a second run to compare with (per-query differences, p-value)"
        )
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

    def handle(self, **options):
        try:
            truth = self._truth(options)
            run = self._run(options["run"], options, truth)
            report = evaluate(
                truth,
                run,
                protocol=options["protocol"],
                k=options["k"],
                metrics=[name.strip() for name in options["metrics"].split(",") if name.strip()],
                normaliser=options["normaliser"],
                ties=options["ties"],
            )
            other = (
                evaluate(
                    truth,
                    self._run(options["compare"], options, truth),
                    protocol=options["protocol"],
                    k=options["k"],
                    metrics=report.metrics,
                    normaliser=options["normaliser"],
                    ties=options["ties"],
                )
                if options["compare"]
                else None
            )
        except (InputError, ValueError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(format_table(report, options["group_by"]))
        result = report.as_json(options["group_by"])
        if other:
            comparison = compare(report, other, "ap" if "ap" in report.metrics else report.metrics[0])
            result["comparison"] = comparison
            self.stdout.write(
                f"\nvs {other.run}: {comparison['metric']} "
                f"{100 * comparison['mean_a']:.1f} vs {100 * comparison['mean_b']:.1f}, "
                f"better on {100 * comparison['improved']:.0f}% of {comparison['queries']} queries, worse on "
                f"{100 * comparison['worse']:.0f}%, paired permutation p = {comparison['p_value']:.4f}"
            )
        if options["json"]:
            options["json"].write_text(json.dumps(result, indent=2))
        if options["csv"]:
            options["csv"].write_text(report.per_query_csv())

    def _truth(self, options) -> GroundTruth:
        if options["qrels"]:
            return read_qrels(options["qrels"], options["queries"])
        if options["protocol"] == "rerank":
            return GroundTruth(
                {}, {}, read_queries(options["queries"]) if options["queries"] else {}, source="rerank candidates"
            )
        truth = qrels_from_database()
        if options["queries"]:
            truth.queries = read_queries(options["queries"])
        return truth

    def _run(self, path, options, truth):
        if options["from_model"] and path is None:
            from lmm.facade import ModelUnavailable

            try:
                run = run_from_method(
                    truth, options["method"], depth=max(options["k"] or 50, options["top"]), top=options["top"]
                )
            except (SearchUnavailable, ModelUnavailable) as error:
                raise CommandError(str(error)) from None
            if options["save_run"]:
                write_atomically(options["save_run"], trec(run))
            return run
        if path is None:
            raise CommandError("Give --run FILE (or --from-model).")
        run = read_run(path, score_column=options["score_column"], queries=truth.queries)
        if options["first_stage"]:
            run = two_stage(read_run(options["first_stage"], queries=truth.queries), run, options["top"])
        return run


def trec(run) -> str:
    """The run in TREC format (qid Q0 docid rank score tag), for upload to the evaluation pages."""
    tag = "".join(c if c.isalnum() else "_" for c in run.name)[:40] or "quire"
    return "".join(
        f"{query_id} Q0 {image_id} {rank} {score:.6f} {tag}\n"
        for query_id, ranked in sorted(run.ranked.items())
        for rank, (image_id, score) in enumerate(ranked, start=1)
    )
