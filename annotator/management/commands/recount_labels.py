from django.core.management.base import BaseCommand, CommandError

from annotator.models import Query
from annotator.tallies import recount


class Command(BaseCommand):
    help = (
        "Count each query's labels again for the dashboard and the query list, from the labels themselves. "
        "Every label written through Quire keeps these counts already; run this after loading labels by SQL."
    )

    def add_arguments(self, parser):
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")

    def handle(self, query_ids, **options):
        if query_ids and (
            unknown := sorted(set(query_ids) - set(Query.objects.filter(id__in=query_ids).values_list("id", flat=True)))
        ):
            raise CommandError(
                f"No query with id {', '.join(map(str, unknown))}: the dashboard (/dashboard/) lists the queries' ids."
            )
        counted = recount(query_ids)
        self.stdout.write(f"Counted the labels of {counted} {'query' if counted == 1 else 'queries'}.")
