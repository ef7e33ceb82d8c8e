import json
from pathlib import Path

from django.core.management.base import BaseCommand, CommandError

from annotator.facade import recall_estimate
from annotator.models import Query
from common.cli import progress_bar
from common.files import write_atomically
from evaluation import plots, simulation, worlds
from evaluation.inputs import InputError, read_qrels
from evaluation.models import SavedSimulation
from evaluation.worlds import KINDS
from search.facade import LABEL_ONLY_STRATEGIES, SearchUnavailable, next_batch


class Command(BaseCommand):
    help = (
        "Replay an oracle annotator over ground truth (relevant if the qrels list it, not relevant otherwise) "
        "through the labeling page's ranking code, and report labels spent to find 50/90/95%% of the positives "
        "per strategy."
    )

    def add_arguments(self, parser):
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
        parser.add_argument("--json", type=Path, help="write the result as JSON")
        parser.add_argument("--plot", type=Path, help="write recall against labels spent as SVG")
        parser.add_argument("--name", help="the name on the evaluation pages (default: from the source)")
        parser.add_argument("--no-save", action="store_true", help="do not keep the result for the evaluation pages")

    def handle(self, **options):
        strategies = list(dict.fromkeys(options["strategy"] or ["text", "feedback"]))
        # An oracle annotator only labels: the strategies that need example images cannot be replayed.
        if unknown := [name for name in strategies if name not in LABEL_ONLY_STRATEGIES]:
            raise CommandError(f"--strategy takes {', '.join(LABEL_ONLY_STRATEGIES)}, not {', '.join(unknown)}.")
        if not 1 <= options["batch"] <= 1000:
            raise CommandError("--batch must be 1 to 1,000 labels.")
        if not 0 < options["target"] <= 1:
            raise CommandError("--target must be a share above 0 and at most 1, e.g. 0.95.")
        if not 1 <= options["max_labels"] <= 100_000:
            raise CommandError("--max-labels must be 1 to 100,000.")
        if not 0 <= options["noise"] < 0.5:
            raise CommandError("--noise is the annotator's error rate: 0 or more and below 0.5, e.g. 0.05.")
        kinds = None
        if options["team_world"]:
            positives, rankers, hard, kinds, source = self._team_world(options)
        elif options["synthetic"]:
            positives, rankers, hard, source = self._synthetic(options)
        else:
            positives, rankers, hard, source = self._real(options)
        if options["noise"]:
            source += f", annotator wrong {options['noise']:.0%} of the time"
        try:
            with progress_bar("Simulating", "replays") as progress:
                result = simulation.simulate(
                    positives,
                    rankers,
                    strategies,
                    batch=options["batch"],
                    target=options["target"],
                    max_labels=options["max_labels"],
                    progress=progress,
                    hard=hard,
                    kinds=kinds,
                    noise=options["noise"],
                    seed=options["seed"],
                )
        except SearchUnavailable as error:
            raise CommandError(str(error)) from None
        result["source"] = source
        self.stdout.write(format_medians(result))
        if options["json"]:
            write_atomically(options["json"], json.dumps(result, indent=1).encode())
        if options["plot"]:
            write_atomically(options["plot"], plots.recall_curves(result["curves"]).encode())
        if not options["no_save"]:
            saved = SavedSimulation.objects.create(name=options["name"] or source, ground_truth=source, result=result)
            self.stdout.write(f"Saved as simulation {saved.pk} (Evaluation pages).")

    def _team_world(self, options):
        kinds = tuple(kind.strip() for kind in options["kinds"].split(",") if kind.strip())
        if not 1 <= options["per_kind"] <= 50:
            raise CommandError("--per-kind must be 1 to 50 queries.")
        try:
            world = worlds.team_world(kinds=kinds, per_kind=options["per_kind"], seed=options["seed"])
        except ValueError as error:
            raise CommandError(f"--kinds: {error}") from None
        source = f"team world ({', '.join(kinds)}; seed {options['seed']})"
        return world.positives, self._world_rankers(world, options), world.hard, world.kinds, source

    def _synthetic(self, options):
        try:
            world = simulation.synthetic_world(
                queries=options["synthetic_queries"], separation=options["separation"], seed=options["seed"]
            )
        except ValueError as error:
            raise CommandError(str(error)) from None
        source = f"synthetic world (separation {options['separation']}, seed {options['seed']})"
        return world.positives, self._world_rankers(world, options), world.hard, source

    def _world_rankers(self, world, options):
        return {
            query_id: (
                simulation.world_ranker(world, query_id),
                None if options["no_estimate"] else simulation.world_estimator(world, query_id),
            )
            for query_id in world.positives
        }

    def _real(self, options):
        try:
            truth = read_qrels(options["qrels"], options["queries"])
        except InputError as error:
            raise CommandError(str(error)) from None
        texts = {query_id: row.get("query_text", "") for query_id, row in truth.queries.items()}
        if not texts:
            texts = dict(Query.objects.filter(pk__in=truth.positives).values_list("id", "text"))
        wanted = [query_id for query_id, found in truth.positives.items() if found]
        if missing := [query_id for query_id in wanted if not texts.get(query_id, "").strip()]:
            raise CommandError(
                f"No text for queries {', '.join(map(str, missing[:5]))}: give --queries (an INQUIRE queries CSV "
                "with query_text) or import the queries first."
            )
        rankers = {
            query_id: (
                _collection_ranker(texts[query_id]),
                None if options["no_estimate"] else _collection_estimator(texts[query_id]),
            )
            for query_id in wanted
        }
        return {query_id: truth.positives[query_id] for query_id in wanted}, rankers, None, str(options["qrels"])


def _collection_ranker(text: str):
    def ranked(strategy, relevant, not_relevant, exclude, k, recent=()):
        hits = next_batch(
            strategy=strategy,
            text=text,
            relevant_ids=relevant,
            not_relevant_ids=not_relevant,
            recent=recent,
            k=k,
            exclude_image_ids=exclude,
        )
        return [hit.image_id for hit in hits]

    return ranked


def _collection_estimator(text: str):
    def estimate(relevant, not_relevant):
        result = recall_estimate(text, relevant, not_relevant)
        return None if result is None else result.recall

    return estimate


def format_medians(result: dict) -> str:
    """The medians table, one line per group and strategy, with each strategy's worst ratio to the first."""
    target = round(100 * result["settings"]["target"])
    lines = [
        f"{'group':<9} {'strategy':<10} {f'labels to {target}%':>14} {'vs first':>9} {'worst':>6} {'>1.1x':>6} "
        f"{'missed':>7} {'est. error':>11}"
    ]
    for group, strategies in result["medians"].items():
        for strategy, row in strategies.items():
            labels = "–" if row["median_labels"] is None else f"{row['median_labels']:.0f}"
            ratio, worst = row.get("median_ratio"), row.get("worst_ratio")
            error = row["median_estimate_error"]
            lines.append(
                f"{group:<9} {strategy:<10} {labels:>14} {'' if ratio is None else f'{ratio:.2f}':>9} "
                f"{'' if worst is None else f'{worst:.2f}':>6} {row.get('worse_than_baseline', ''):>6} "
                f"{row['missed']:>7} {'' if error is None else f'{error:.2f}':>11}"
            )
    return "\n".join(lines)
