from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.labels import settle_again
from annotator.labels.tallies import recount
from annotator.models import Query
from common.cli import progress_bar


class Command(BaseCommand):
    help = (
        "Count each query's labels again for the dashboard and the query list, from the labels themselves. "
        "Every label written through Quire keeps these counts already; run this after loading labels by SQL. "
        "With --finals, first check every final label against its judgments and the query's rule, and make "
        "again the ones missing, left over or wrong."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        parser.add_argument(
            "--finals",
            action="store_true",
            help="also derive each final label again from the judgments (repairs missing or wrong final labels)",
        )

    def handle(self, query_ids: list[int] | None, finals: bool, **options: Any) -> None:
        if query_ids and (
            unknown := sorted(set(query_ids) - set(Query.objects.filter(id__in=query_ids).values_list("id", flat=True)))
        ):
            raise CommandError(
                f"No query with id {', '.join(map(str, unknown))}: the dashboard (/dashboard/) lists the queries' ids."
            )
        if finals:
            for query_id in query_ids or Query.objects.order_by("pk").values_list("pk", flat=True):
                with progress_bar(f"query {query_id}", "images") as progress:
                    changed = settle_again(query_id, progress=progress)
                self.stdout.write(
                    f"query {query_id}: {changed} final labels made again"
                    if changed
                    else f"query {query_id}: every final label as its judgments say"
                )
        counted = recount(query_ids)
        self.stdout.write(f"Counted the labels of {counted} {'query' if counted == 1 else 'queries'}.")
