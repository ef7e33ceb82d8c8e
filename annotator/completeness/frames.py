"""The frame of a completeness claim: the images it speaks of, declared per check and frozen when the check is drawn.

Over a whole 5M-image collection a guarantee for a query with 46 positives is out of reach (about a million random
labels to meet 10 of them); over a declared frame it is cheap. So a claim names its frame:

  collection  every image of the collection
  taxa        the images of some taxa, at any rank (the labeling page's species filter)
  top         the top `depth` images of the text ranking and of the learned (feedback) ranking at the draw, together
  reviewed    the images judged so far and a `top` frame: a query's default, so that every positive the team found
              is in it (a near-duplicate crowd can keep found positives out of both rankings' tops)

The ids are kept packed in the check's row (sorted, delta-encoded, zlib): a frame of 5M contiguous ids takes a few
kilobytes, and a `top` frame of 20,000 scattered ones about 40 KB.

A query's frame is frozen once (QueryFrame): the first check, per query or of the benchmark, freezes the default
chosen for the query (`default_spec`) unless staff declare one, and every later check is drawn over the same ids,
so that a re-check speaks of the same set. Declaring a frame replaces the frozen one; the claims say which.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from annotator.labels.sealed import Writer
from annotator.models import CompletenessCheck, Judgment, Label, LabelValue, Query, QueryFrame, pack_ids, unpack_ids
from catalog.facade import UnknownTaxon, species_for_all
from catalog.models import Image
from search.facade import SearchUnavailable, rank

KINDS = tuple(CompletenessCheck.Frame.values)
# Deepest `top` frame: two rankings of 100,000 (the search pages through them 10,000 at a time).
MAX_DEPTH = 100_000
SEARCH_PAGE = 10_000
MAX_TAXA = 50
# The default frame: the top of the two rankings down to twice as deep as the team has judged, at least this deep.
# A fixed depth fits no query: 5,000 buried a query of 5 positives in 9,800 images to check, 1,000 cut off a
# query whose positives run past rank 1,000.
DEFAULT_MIN_DEPTH = 500
DEFAULT_DEPTH_STEP = 500


class BadCheck(ValueError):
    """A completeness check that cannot be drawn as asked; the text says what to change. Nothing is drawn."""


class NothingToCheckYet(BadCheck):
    """The query is not ready for a check (no labels yet): a state to describe, not a request to refuse, where
    a page only asks what a check would cost."""


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
    if kind in (CompletenessCheck.Frame.TOP, CompletenessCheck.Frame.REVIEWED):
        return FrameSpec(kind, depth=_read_depth(kind, raw.get("depth")))
    if kind == CompletenessCheck.Frame.TAXA:
        return FrameSpec(kind, taxa=_read_taxa(raw.get("taxa")))
    return FrameSpec(kind)


def _read_depth(kind: str, depth: Any) -> int:
    """A ranked frame's depth: a whole number from 1 to MAX_DEPTH (a JSON true is not 1)."""
    if isinstance(depth, bool) or not isinstance(depth, int) or not 1 <= depth <= MAX_DEPTH:
        raise BadCheck(
            f'A "{kind}" frame needs a "depth", a whole number from 1 to {MAX_DEPTH:,}, not {_shown(depth)}.'
        )
    return depth


def _read_taxa(taxa: Any) -> tuple[str, ...]:
    """A taxa frame's names or ids, 1 to MAX_TAXA of them, each once, in the order given."""
    if not isinstance(taxa, list) or not taxa or len(taxa) > MAX_TAXA:
        raise BadCheck(f'A "taxa" frame needs "taxa": a list of 1 to {MAX_TAXA} taxon names or ids.')
    names = [str(name).strip() for name in taxa if isinstance(name, str | int) and not isinstance(name, bool)]
    if len(names) != len(taxa) or not all(names) or any("\x00" in name for name in names):
        raise BadCheck('Each of the frame\'s "taxa" must be a taxon name or id, such as "Aves" or 3.')
    return tuple(dict.fromkeys(names))


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
    top = _top(query, spec.depth or 0)
    if spec.kind == CompletenessCheck.Frame.REVIEWED:
        judged = Judgment.objects.filter(query=query).values_list("image_id", flat=True).distinct()
        return np.union1d(top, _sorted(judged.iterator(chunk_size=SEARCH_PAGE)))
    return top


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


# The frames' ids are packed as the models keep them; named here for the rooms that read frames.
pack, unpack = pack_ids, unpack_ids


def default_spec(query: Query) -> FrameSpec:
    """The frame chosen for a query that has none: the images judged so far and the top of its rankings to twice
    the images judged (rounded up to DEFAULT_DEPTH_STEP, 500), at least DEFAULT_MIN_DEPTH (500) and at most
    MAX_DEPTH."""
    judged = Judgment.objects.filter(query=query).values("image_id").distinct().count()
    depth = -(-2 * judged // DEFAULT_DEPTH_STEP) * DEFAULT_DEPTH_STEP
    return FrameSpec(CompletenessCheck.Frame.REVIEWED, depth=min(MAX_DEPTH, max(DEFAULT_MIN_DEPTH, depth)))


@dataclass(frozen=True)
class Frame:
    """A query's frame: what it is (spec), its ids, and whether it is frozen already or would be on the draw."""

    spec: FrameSpec
    ids: npt.NDArray[np.int64]
    frozen: bool
    chosen: bool  # Quire's default for the query, not declared by staff

    def as_json(self) -> dict[str, Any]:
        return {**self.spec.as_json(), "size": len(self.ids), "chosen": self.chosen, "frozen": self.frozen}


def spec_of(frame: QueryFrame) -> FrameSpec:
    return FrameSpec(frame.kind, depth=frame.depth, taxa=tuple(frame.taxa or ()))


def frame_of(query: Query, declared: FrameSpec | None = None) -> Frame:
    """The frame a check of `query` is drawn over (reads only): `declared` when staff name one, else the frozen
    one, else the default the draw would freeze."""
    if declared is not None:
        return Frame(declared, frame_image_ids(query, declared), frozen=False, chosen=False)
    stored = QueryFrame.objects.filter(query=query).first()
    if stored is not None:
        return Frame(spec_of(stored), unpack(stored.ids), frozen=True, chosen=stored.chosen)
    spec = default_spec(query)
    return Frame(spec, frame_image_ids(query, spec), frozen=False, chosen=True)


def freeze(query: Query, frame: Frame, user: Writer) -> None:
    """Keep `frame` as the query's frame (inside the draw's transaction); a declared one replaces the old."""
    if frame.frozen:
        return
    QueryFrame.objects.update_or_create(
        query=query,
        defaults={
            "kind": frame.spec.kind, "depth": frame.spec.depth, "taxa": list(frame.spec.taxa),
            "size": len(frame.ids), "ids": pack(frame.ids), "chosen": frame.chosen,
            "declared_by": None if frame.chosen else user,
        },
    )  # fmt: skip
