import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.methods.registry import RERANK_METHODS
from annotator.methods.rerank import DEFAULT_TOP, plan_for, rerank
from annotator.models import Query
from common.cli import progress_bar
from lmm.facade import ModelUnavailable
from search.facade import SearchUnavailable


class Command(BaseCommand):
    help = (
        "Rerank a query's CLIP top N with the configured vision-language model (INQUIRE's two-stage rerank): "
        "prints image_id and score, best first. Answers are cached; scores are kept per query, image and model."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("query_id", help="the query's id")
        parser.add_argument("--top", type=int, default=DEFAULT_TOP, help=f"first-stage depth (default {DEFAULT_TOP})")
        parser.add_argument("--method", choices=RERANK_METHODS, default="yesno")
        parser.add_argument("--json", action="store_true", help="print a JSON list of {image_id, score}")
        parser.add_argument(
            "--plan-only",
            action="store_true",
            help="structured: write (or show) the query's context and sub-questions and stop, to edit them first",
        )

    def handle(self, **options: Any) -> None:
        try:
            query = Query.objects.get(pk=int(options["query_id"]))
        except (ValueError, OverflowError):
            raise CommandError(
                f"QUERY_ID must be a query's id (a whole number), not {options['query_id']!r}."
            ) from None
        except Query.DoesNotExist:
            raise CommandError(
                f"No query {options['query_id']}: `manage.py search` lists none; see the query list."
            ) from None
        if not 1 <= options["top"] <= 10_000:
            raise CommandError("--top must be 1 to 10,000.")
        if options["plan_only"]:
            try:
                plan = plan_for(query)
            except ModelUnavailable as error:
                raise CommandError(str(error)) from None
            self.stdout.write(f"Context: {plan.context}")
            for number, question in enumerate(plan.questions, start=1):
                self.stdout.write(f"{number}. {question}")
            return
        try:
            with progress_bar(f"Reranking query {query.pk}", "images") as progress:
                result = rerank(query, top=options["top"], method=options["method"], progress=progress)
        except (SearchUnavailable, ModelUnavailable) as error:
            raise CommandError(str(error)) from None
        if options["json"]:
            self.stdout.write(json.dumps([{"image_id": i, "score": round(s, 6)} for i, s in result.ranking]))
        else:
            for image_id, score in result.ranking:
                self.stdout.write(f"{image_id}\t{score:.6f}")
        self.stderr.write(
            f"{len(result.ranking)} images: {result.asked} asked, {result.cached} from the cache"
            + (f", {len(result.skipped)} unreadable skipped" if result.skipped else "")
        )
