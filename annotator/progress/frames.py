"""The frame of a completeness claim: the images it speaks of, declared per check and frozen when the check is drawn.

Over a whole 5M-image collection a guarantee for a query with 46 positives is out of reach (about a million random
labels to meet 10 of them); over a declared frame it is cheap. So a claim names its frame:

  collection  every image of the collection
  taxa        the images of some taxa, at any rank (the labeling page's species filter)
  top         the top `depth` images of the text ranking and of the learned (feedback) ranking at the draw, together

The ids are kept packed in the check's row (sorted, delta-encoded, zlib): a frame of 5M contiguous ids takes a few
kilobytes, and a `top` frame of 20,000 scattered ones about 40 KB.
"""

import zlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from annotator.models import CompletenessCheck, Label, LabelValue, Query
from catalog.facade import UnknownTaxon, species_for_all
from catalog.models import Image
from search.facade import SearchUnavailable, rank

KINDS = tuple(CompletenessCheck.Frame.values)
# Deepest `top` frame: two rankings of 100,000 (the search pages through them 10,000 at a time).
MAX_DEPTH = 100_000
SEARCH_PAGE = 10_000
MAX_TAXA = 50


class BadCheck(ValueError):
    """A completeness check that cannot be drawn as asked; the text says what to change. Nothing is drawn."""


@dataclass(frozen=True)
class FrameSpec:
    kind: str
    depth: int | None = None
    taxa: tuple[str, ...] = ()

    def as_json(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"kind": self.kind, "depth": self.depth}
        if self.kind == CompletenessCheck.Frame.TAXA:
            shown["taxa"] = list(self.taxa)
        return shown


def read_frame(raw: Any) -> FrameSpec:
    """The frame a request declares ({"kind": "top", "depth": 5000}, {"kind": "taxa", "taxa": ["Aves"]},
    {"kind": "collection"}); BadCheck saying what to fix for anything else."""
    if not isinstance(raw, dict):
        raise BadCheck('"frame" must be an object such as {"kind": "top", "depth": 5000}.')
    kind = raw.get("kind")
    if kind not in KINDS:
        raise BadCheck(f'The frame\'s "kind" must be one of {", ".join(KINDS)}, not {_shown(kind)}.')
    if kind == CompletenessCheck.Frame.TOP:
        depth = raw.get("depth")
        if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
            raise BadCheck(
                f'A "top" frame needs a "depth", a whole number from 1 to {MAX_DEPTH:,}, not {_shown(depth)}.'
            )
        return FrameSpec(kind, depth=depth)
    if kind == CompletenessCheck.Frame.TAXA:
        taxa = raw.get("taxa")
        if not isinstance(taxa, list) or not taxa or len(taxa) > MAX_TAXA:
            raise BadCheck(f'A "taxa" frame needs "taxa": a list of 1 to {MAX_TAXA} taxon names or ids.')
        names = [str(name).strip() for name in taxa if isinstance(name, str | int) and not isinstance(name, bool)]
        if len(names) != len(taxa) or not all(names) or any("\x00" in name for name in names):
            raise BadCheck('Each of the frame\'s "taxa" must be a taxon name or id, such as "Aves" or 3.')
        return FrameSpec(kind, taxa=tuple(dict.fromkeys(names)))
    return FrameSpec(kind)


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def frame_image_ids(query: Query, spec: FrameSpec) -> npt.NDArray[np.int64]:
    """The ids of the frame's images now, sorted; BadCheck for unknown taxa or a collection that cannot be searched."""
    if spec.kind == CompletenessCheck.Frame.COLLECTION:
        return _sorted(Image.objects.values_list("id", flat=True).iterator(chunk_size=SEARCH_PAGE))
    if spec.kind == CompletenessCheck.Frame.TAXA:
        try:
            species = species_for_all(list(spec.taxa))
        except UnknownTaxon as error:
            raise BadCheck(str(error)) from None
        images = Image.objects.filter(taxon_id__in=list(species)).values_list("id", flat=True)
        return _sorted(images.iterator(chunk_size=SEARCH_PAGE))
    return _top(query, spec.depth or 0)


def _top(query: Query, depth: int) -> npt.NDArray[np.int64]:
    """The union of the top `depth` of the text ranking and of the feedback ranking learned from the final labels."""
    values = Label.objects.filter(query=query).values_list("image_id", "value")
    relevant = [image_id for image_id, value in values if value == LabelValue.RELEVANT]
    not_relevant = [image_id for image_id, value in values if value == LabelValue.NOT_RELEVANT]
    rankings: list[tuple[str, list[int], list[int]]] = [("text", [], [])]
    if relevant:  # with no positive the learned ranking is the text's
        rankings.append(("feedback", relevant, not_relevant))
    ids: list[int] = []
    try:
        for strategy, positives, negatives in rankings:
            for offset in range(0, depth, SEARCH_PAGE):
                k = min(SEARCH_PAGE, depth - offset)
                hits = rank(
                    strategy=strategy, text=query.text, relevant_ids=positives, not_relevant_ids=negatives,
                    k=k, offset=offset,
                )  # fmt: skip
                ids.extend(hit.image_id for hit in hits)
                if len(hits) < k:
                    break
    except SearchUnavailable as error:
        raise BadCheck(f"The frame's rankings cannot be read: {error}") from None
    return _sorted(ids)


def _sorted(ids: Iterable[int]) -> npt.NDArray[np.int64]:
    return np.unique(np.fromiter(ids, dtype=np.int64))


def pack(ids: npt.NDArray[np.int64]) -> bytes:
    """Sorted unique ids, stored small: their first differences, zlib-compressed."""
    return zlib.compress(np.diff(np.asarray(ids, dtype=np.int64), prepend=0).astype("<i8").tobytes(), 6)


def unpack(blob: bytes | memoryview) -> npt.NDArray[np.int64]:
    deltas = np.frombuffer(zlib.decompress(bytes(blob)), dtype="<i8")
    return np.cumsum(deltas).astype(np.int64)
