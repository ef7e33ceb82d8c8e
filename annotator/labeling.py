"""What the labeling page shows: a page of the ranking for a query, with each image's stored label.

Labels belong to the query, not to the text typed in the box: an annotator can
refine the search text or the taxon filters and keep every label.
"""

from dataclasses import dataclass

from catalog.models import Image
from search.facade import SearchUnavailable, search

from .models import Label, Query

PAGE_SIZES = (50, 200, 500)


@dataclass
class Tile:
    rank: int
    score: float
    image: Image
    label: str  # a LabelValue, or "" when not labeled yet


@dataclass
class ResultsPage:
    tiles: list[Tile]
    offset: int
    limit: int
    error: str = ""

    @property
    def next_offset(self) -> int | None:
        return self.offset + self.limit if len(self.tiles) == self.limit else None


def results(query: Query, *, text: str, taxon_ids=None, hide_labeled=False, offset=0, limit=50) -> ResultsPage:
    """Rank the collection for `text` (within `taxon_ids` when given); never raises for the user's input."""
    if limit not in PAGE_SIZES:
        limit = PAGE_SIZES[0]
    excluded = Label.objects.filter(query=query).values_list("image_id", flat=True) if hide_labeled else None
    try:
        hits = search(text=text, k=limit, offset=max(0, offset), taxon_ids=taxon_ids, exclude_image_ids=excluded)
    except SearchUnavailable as error:
        return ResultsPage([], offset, limit, str(error))
    images = Image.objects.select_related("taxon").in_bulk([hit.image_id for hit in hits])
    labels = dict(Label.objects.filter(query=query, image_id__in=images).values_list("image_id", "value"))
    tiles = [
        Tile(
            rank=offset + position + 1, score=hit.score, image=images[hit.image_id], label=labels.get(hit.image_id, "")
        )
        for position, hit in enumerate(hits)
        if hit.image_id in images  # an image deleted since the index was built
    ]
    return ResultsPage(tiles, offset, limit)
