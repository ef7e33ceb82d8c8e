from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.files import write_atomically
from evaluation import cli
from evaluation.inputs import GroundTruth, InputError, Run, qrels_from_database, read_qrels, read_queries
from evaluation.runs import METHODS, run_from_method
from lmm.facade import ModelUnavailable
from search.facade import SearchUnavailable


class Command(BaseCommand):
    help = "Score a ranked run against relevance labels with the INQUIRE metrics (AP@k, nDCG@k, MRR, ...)."
    # Scoring files needs neither the URL configuration nor the models the system checks import (3 s of
    # start-up), and the model clients (the OpenAI client: 1 s) are imported only for --from-model
    # (bench/eval_bench.py).
    requires_system_checks = []

    def add_arguments(self, parser: CommandParser) -> None:
        cli.add_arguments(parser)  # the file options, shared with `python -m evaluation` (no Django)
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
        parser.add_argument(
            "--release", help="score against a release's qrels (manage.py release), so the figure names what it used"
        )

    def handle(self, **options: Any) -> None:
        try:
            truth = self._truth(options)
            text = cli.score(truth, lambda path: self._run(path, options, truth), options)
        except (InputError, ValueError) as error:
            raise CommandError(str(error)) from None
        self.stdout.write(text, ending="")

    def _truth(self, options: dict[str, Any]) -> GroundTruth:
        if options["release"]:
            if options["qrels"]:
                raise CommandError("Give --release or --qrels, not both: each names the ground truth.")
            from annotator.facade import BadRelease, ground_truth_files  # the labeling app only when a release is named

            try:
                labels, queries = ground_truth_files(options["release"])
            except BadRelease as bad:
                raise CommandError(str(bad)) from None
            truth = read_qrels(labels, options["queries"] or queries)
            truth.source = f"release {options['release']}"
            return truth
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

    def _run(self, path: Path | None, options: dict[str, Any], truth: GroundTruth) -> Run:
        if options["from_model"] and path is None:
            try:
                run = run_from_method(
                    truth, options["method"], depth=max(options["k"] or 50, options["top"]), top=options["top"]
                )
            except (SearchUnavailable, ModelUnavailable) as error:
                raise CommandError(str(error)) from None
            if options["save_run"]:
                write_atomically(options["save_run"], trec(run))
            return run
        return cli.run_from_file(path, options, truth)


def trec(run: Run) -> str:
    """The run in TREC format (qid Q0 docid rank score tag), for upload to the evaluation pages."""
    tag = "".join(c if c.isalnum() else "_" for c in run.name)[:40] or "quire"
    return "".join(
        f"{query_id} Q0 {image_id} {rank} {score:.6f} {tag}\n"
        for query_id, ranked in sorted(run.ranked.items())
        for rank, (image_id, score) in enumerate(ranked, start=1)
    )
