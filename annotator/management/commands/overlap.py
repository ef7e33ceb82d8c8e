from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Query
from annotator.team.overlap import MAX_JUDGMENTS_WANTED, draw_sample
from common.cli import progress_bar
from search.facade import SearchUnavailable


class Command(BaseCommand):
    help = (
        "Draw blind double labeling samples: a share of each query's labeled images (--fraction 0.1) and/or every "
        "image down to a rank of its text ranking (--top 50), to be judged by --judgments annotators each. "
        "An annotator who has not judged an image of the sample sees it unlabeled until it has them all."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        parser.add_argument("--fraction", type=float, help="share of the images labeled so far, 0 to 1")
        parser.add_argument("--top", type=int, help="every image down to this rank of the text ranking")
        parser.add_argument(
            "--judgments", type=int, default=2, help=f"judgments per image, 2 to {MAX_JUDGMENTS_WANTED}"
        )

    def handle(
        self, query_ids: list[int] | None, fraction: float | None, top: int | None, judgments: int, **options: Any
    ) -> None:
        if fraction is None and top is None:
            raise CommandError("Say what to sample: --fraction 0.1 (10% of the labeled images), --top 50, or both.")
        chosen = Query.objects.all()
        if query_ids:
            chosen = chosen.filter(id__in=query_ids)
            if unknown := sorted(set(query_ids) - set(chosen.values_list("id", flat=True))):
                raise CommandError(f"unknown query id(s) {', '.join(map(str, unknown))}")
        queries = list(chosen)
        added = 0
        with progress_bar("overlap", "queries") as progress:
            for done, query in enumerate(queries, start=1):
                try:
                    added += draw_sample(query, fraction=fraction, top=top, wanted=judgments)
                except (ValueError, SearchUnavailable) as error:
                    raise CommandError(f"query {query.pk}: {error}") from None
                progress(done, len(queries))
        self.stdout.write(f"{added} images added to the overlap samples of {len(queries)} queries.")
