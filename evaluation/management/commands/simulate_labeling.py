import json
from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.cli import progress_bar
from common.files import write_atomically
from evaluation import benchmark_sim, certification, plots, replays, simulation
from evaluation.models import SavedSimulation
from evaluation.worlds import KINDS
from search.facade import SearchUnavailable


class Command(BaseCommand):
    help = (
        "Replay an oracle annotator over ground truth (relevant if the qrels list it, not relevant otherwise) "
        "through the labeling page's ranking code, and report labels spent to find 50/90/95%% of the positives "
        "per strategy."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        source = parser.add_mutually_exclusive_group(required=True)
        source.add_argument("--qrels", type=Path, help="INQUIRE annotations CSV (or Quire labels CSV): the positives")
        source.add_argument(
            "--synthetic", action="store_true", help="the classic synthetic world (evaluation/worlds.py): no index"
        )
        source.add_argument(
            "--team-world",
            action="store_true",
            help="the world a team meets (evaluation/worlds.py): hard and easy queries, 5 positives behind "
            "near-duplicates, positives in two clusters, a near-duplicate crowd above every positive",
        )
        parser.add_argument(
            "--queries",
            type=Path,
            help="INQUIRE queries CSV: query_text per query_id (default: the database's queries)",
        )
        parser.add_argument(
            "--strategy", action="append", help="repeatable; the first is the baseline (default: text, feedback)"
        )
        parser.add_argument(
            "--batch", type=int, default=50, help="labels per round before the ranking is asked again (50)"
        )
        parser.add_argument(
            "--target", type=float, default=0.95, help="stop a query at this share of its positives (0.95)"
        )
        parser.add_argument("--max-labels", type=int, default=2000, help="labels per query at most (2000)")
        parser.add_argument("--synthetic-queries", type=int, default=20)
        parser.add_argument(
            "--separation", type=float, default=0.4, help="synthetic world: positives' distance from the crowd"
        )
        parser.add_argument(
            "--kinds", default=",".join(KINDS), help=f"team world: its kinds of query ({','.join(KINDS)})"
        )
        parser.add_argument("--per-kind", type=int, default=2, help="team world: queries of each kind (2)")
        parser.add_argument(
            "--noise", type=float, default=0.0, help="the annotator's error rate, e.g. 0.05 (wrong on 5%% of images)"
        )
        parser.add_argument("--seed", type=int, default=0)
        parser.add_argument("--no-estimate", action="store_true", help="skip the stopping estimate (faster)")
        parser.add_argument(
            "--completeness",
            action="store_true",
            help="with --team-world: measure the stopping rules instead (the completeness check, the old estimate, "
            "INQUIRE's run) against the truth, beside an oracle stop; --target is the recall to certify",
        )
        parser.add_argument("--confidence", type=float, default=0.95, help="--completeness: the claim's (0.95)")
        parser.add_argument(
            "--depth", type=int, default=0, help="--completeness: the frame's depth (0: the tool's default, frozen)"
        )
        parser.add_argument("--seeds", type=int, default=1, help="--completeness: worlds, seeds --seed onward (1)")
        parser.add_argument(
            "--claims",
            type=int,
            metavar="QUERIES",
            help="with --completeness: measure both claims, each query's and the benchmark's, the way a team reaches "
            "them (the advice, the default frame, an expert adjudicator) over INQUIRE-shaped worlds of QUERIES "
            "queries (positives lognormal, median 46): 10, or INQUIRE's 250",
        )
        parser.add_argument("--json", type=Path, help="write the result as JSON")
        parser.add_argument("--plot", type=Path, help="write recall against labels spent as SVG")
        parser.add_argument("--name", help="the name on the evaluation pages (default: from the source)")
        parser.add_argument("--no-save", action="store_true", help="do not keep the result for the evaluation pages")

    def handle(self, **options: Any) -> None:
        if options["completeness"]:
            self._completeness(options)
            return
        try:
            strategies = replays.strategies_of(options["strategy"])
            replays.check_settings(options)
            grounds = replays.grounds(options)
            with progress_bar("Simulating", "replays") as progress:
                result = simulation.simulate(
                    grounds.positives,
                    grounds.rankers,
                    strategies,
                    batch=options["batch"],
                    target=options["target"],
                    max_labels=options["max_labels"],
                    progress=progress,
                    hard=grounds.hard,
                    kinds=grounds.kinds,
                    noise=options["noise"],
                    seed=options["seed"],
                )
        except (replays.BadReplay, SearchUnavailable) as error:
            raise CommandError(str(error)) from None
        result["source"] = grounds.source
        self.stdout.write(replays.format_medians(result))
        if options["json"]:
            write_atomically(options["json"], json.dumps(result, indent=1).encode())
        if options["plot"]:
            write_atomically(options["plot"], plots.recall_curves(result["curves"]).encode())
        if not options["no_save"]:
            name = options["name"] or grounds.source
            saved = SavedSimulation.objects.create(name=name, ground_truth=grounds.source, result=result)
            self.stdout.write(f"Saved as simulation {saved.pk} (Evaluation pages).")

    def _completeness(self, options: dict[str, Any]) -> None:
        """The stopping rules against the truth (evaluation.certification), over --seeds team worlds; with --claims,
        both completeness claims (evaluation.benchmark_sim)."""
        if options["claims"] is not None:
            self._claims(options)
            return
        try:
            settings = replays.certification_settings(options)
            with progress_bar("Simulating", "runs") as progress:
                result = certification.simulate(replays.seeded_team_worlds(options), settings, progress=progress)
        except replays.BadReplay as error:
            raise CommandError(str(error)) from None
        self.stdout.write(certification.format_summary(result))
        if options["json"]:
            write_atomically(options["json"], json.dumps(result, indent=1).encode())

    def _claims(self, options: dict[str, Any]) -> None:
        try:
            settings = replays.claims_settings(options)
        except replays.BadReplay as error:
            raise CommandError(str(error)) from None
        chosen = replays.seeded_inquire_worlds(options)
        with progress_bar("Simulating", "seeds") as progress:
            result = benchmark_sim.simulate(chosen, settings, progress=progress, total=options["seeds"])
        self.stdout.write(benchmark_sim.format_summary(result))
        if options["json"]:
            write_atomically(options["json"], json.dumps(result, indent=1, default=float).encode())
