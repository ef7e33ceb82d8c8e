import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Label
from catalog.facade import UnknownTaxon, species_for_all
from catalog.models import Taxon
from search.facade import Hit, SearchUnavailable, configured_spec, search


class Command(BaseCommand):
    help = (
        'Rank the collection for a text ("puffins carrying food") or an image (--image ID); '
        "prints rank, image_id, score, taxon."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("text", nargs="?", help="what the images should show")
        parser.add_argument(
            "--image", type=int, help="rank by similarity to this image of the collection instead (it is left out)"
        )
        parser.add_argument(
            "--taxon",
            action="append",
            default=[],
            metavar="NAME",
            help="only images of this taxon, at any rank (species, genus, family...); repeat for several",
        )
        parser.add_argument(
            "--exclude-labeled", type=int, metavar="QUERY_ID", help="leave out images labeled for this query"
        )
        parser.add_argument("-k", type=int, default=50, help="how many results (default 50)")
        parser.add_argument("--offset", type=int, default=0, help="skip this many results first (paging)")
        parser.add_argument("--json", dest="as_json", action="store_true", help="print JSON lines instead of a table")

    def handle(
        self,
        text: str | None,
        image: int | None,
        taxon: list[str] | None,
        exclude_labeled: int | None,
        k: int,
        offset: int,
        as_json: bool,
        **options: Any,
    ) -> None:
        if (text is None) == (image is None):
            raise CommandError('Give a query text or --image ID (one of them), e.g. search "puffins carrying food".')
        spec = configured_spec()
        if spec.random_weights and text is not None:
            self.stderr.write(self.style.WARNING(f"{spec.name} has random weights: this ranking is meaningless."))
        try:
            taxon_ids = species_for_all(taxon) if taxon else None
            # The image asked about is not its own look-alike: "images like 879" starts with another image.
            excluded: list[int] = [image] if image is not None else []
            if exclude_labeled is not None:
                excluded += Label.objects.filter(query_id=exclude_labeled).values_list("image_id", flat=True)
            hits = search(
                text=text,
                image_id=image,
                k=k,
                offset=offset,
                taxon_ids=taxon_ids,
                exclude_image_ids=excluded,
                spec=spec,
            )
        except (UnknownTaxon, SearchUnavailable) as error:
            raise CommandError(str(error)) from None
        names = dict(Taxon.objects.filter(pk__in={hit.taxon_id for hit in hits}).values_list("id", "scientific_name"))
        for rank, hit in enumerate(hits, start=offset + 1):
            name = names.get(hit.taxon_id, "")
            if as_json:
                self.stdout.write(_json_line(rank, hit, name))
            else:
                self.stdout.write(f"{rank:>6}  {hit.image_id:>12}  {hit.score:+.4f}  {name}")
        if not hits:
            self.stderr.write("No images match.")


def _json_line(rank: int, hit: Hit, name: str) -> str:
    return json.dumps(
        {"rank": rank, "image_id": hit.image_id, "score": round(hit.score, 6), "taxon_id": hit.taxon_id, "taxon": name}
    )
