from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Query
from annotator.team.overlap import MAX_JUDGMENTS_WANTED, draw_sample, open_sample
from common.cli import progress_bar
from search.facade import SearchUnavailable


class Command(BaseCommand):
    help = (
        "Draw blind double labeling samples: a share of each query's labeled images (--fraction 0.1) and/or every "
        "image down to a rank of its text ranking (--top 50), to be judged by --judgments annotators each. "
        "An image of the sample stays sealed (its judges see only their own vote) until an adjudicator decides it "
        "or staff open the sample: --open opens the images that have their judgments."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        parser.add_argument("--fraction", type=float, help="share of the images labeled so far, 0 to 1")
        parser.add_argument("--top", type=int, help="every image down to this rank of the text ranking")
        parser.add_argument(
            "--judgments", type=int, default=2, help=f"judgments per image, 2 to {MAX_JUDGMENTS_WANTED}"
        )
        parser.add_argument(
            "--open", action="store_true", help="open the samples: their judged images show every vote from now on"
        )

    def handle(
        self, query_ids: list[int] | None, fraction: float | None, top: int | None, judgments: int, **options: Any
    ) -> None:
        _refuse_unclear(options["open"], drawing=fraction is not None or top is not None)
        queries = _chosen(query_ids)
        if options["open"]:
            counted = [open_sample(query) for query in queries]
            opened, waiting = sum(n for n, _ in counted), sum(n for _, n in counted)
            self.stdout.write(
                f"{opened} images of the overlap samples of {len(queries)} queries opened; {waiting} still wait for a "
                "judgment and stay sealed."
            )
            return
        added = 0
        with progress_bar("overlap", "queries") as progress:
            for done, query in enumerate(queries, start=1):
                try:
                    added += draw_sample(query, fraction=fraction, top=top, wanted=judgments)
                except (ValueError, SearchUnavailable) as error:
                    raise CommandError(f"query {query.pk}: {error}") from None
                progress(done, len(queries))
        self.stdout.write(f"{added} images added to the overlap samples of {len(queries)} queries.")


def _chosen(query_ids: list[int] | None) -> list[Query]:
    """The queries named (every query where none is); CommandError naming the unknown ids."""
    chosen = Query.objects.all()
    if query_ids:
        chosen = chosen.filter(id__in=query_ids)
        if unknown := sorted(set(query_ids) - set(chosen.values_list("id", flat=True))):
            raise CommandError(f"unknown query id(s) {', '.join(map(str, unknown))}")
    return list(chosen)


def _refuse_unclear(opening: bool, *, drawing: bool) -> None:
    if opening and drawing:
        raise CommandError("--open opens the samples drawn; draw (--fraction, --top) and open in two runs.")
    if not opening and not drawing:
        raise CommandError(
            "Say what to sample: --fraction 0.1 (10% of the labeled images), --top 50, or both; or --open."
        )
