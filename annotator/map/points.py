"""The map of the collection as one query's annotator sees it: every image's place, coloured by the label they
see (blind overlap respected: annotator.labels.sealed), the lasso that filters the grid, and the hints that point
at clusters nobody has labeled.

The positions are the search engine's (search/layout.py, one map per model); this module only joins them to the
query's labels.
"""

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from annotator.labeling.grid import examples_of, labeled_ids
from annotator.labels import visibility
from annotator.labels.sealed import Writer, seen_by
from annotator.models import UNDECIDED, Label, LabelValue, Query
from search.facade import (
    BadPolygon,
    Layout,
    SearchUnavailable,
    images_within,
    map_of,
    parse_polygon,
    score_collection,
)

# A label as one byte in the page's binary form; 0 is unlabeled.
LABEL_CODES = {LabelValue.RELEVANT: 1, LabelValue.NOT_RELEVANT: 2, LabelValue.UNSURE: 3, UNDECIDED: 4}
# The binary form: a little-endian header, then columns (the page reads them as typed arrays without parsing).
BINARY_MAGIC = b"QMAP1\0\0\0"
BINARY_HEADER = struct.Struct("<8sII")  # magic, count, version length; then the version (ASCII), padded to 8
MAX_PAGE = 50_000


@dataclass(frozen=True)
class Selection:
    """A lasso from the page's address: its image ids, or why it is left out."""

    image_ids: np.ndarray | None
    error: str = ""


def selection(text: str) -> Selection:
    """The images inside the `within=` polygon; an error sentence (and no filter) for a bad one or no map."""
    if not text:
        return Selection(None)
    try:
        return Selection(images_within(parse_polygon(text)))
    except BadPolygon as error:
        return Selection(None, f"{error} The map's selection is left out.")
    except SearchUnavailable as error:  # no map computed yet
        return Selection(None, str(error))


def label_codes(layout: Layout, seen: Mapping[int, str]) -> np.ndarray:
    """One byte per map point (layout order): the label the viewer sees, 0 for none."""
    codes = np.zeros(len(layout), dtype=np.uint8)
    if seen:
        ids = np.fromiter(seen.keys(), dtype=np.int64, count=len(seen))
        values = np.fromiter((LABEL_CODES.get(value, 0) for value in seen.values()), dtype=np.uint8, count=len(seen))
        where = np.searchsorted(layout.image_ids, ids)
        where = np.minimum(where, max(len(layout) - 1, 0))
        on_map = layout.image_ids[where] == ids if len(layout) else np.zeros(len(ids), bool)
        codes[where[on_map]] = values[on_map]
    return codes


def points_page(
    query: Query, viewer: Writer, after: int | None, size: int
) -> tuple[list[dict[str, int | float | str | None]], int | None]:
    """Up to `size` points with image id greater than `after`, in id order, and the id to continue after
    (None at the end). Raises SearchUnavailable (NoMap) before a map is computed."""
    layout = map_of()
    start = 0 if after is None else int(np.searchsorted(layout.image_ids, after, side="right"))
    stop = min(len(layout), start + size)
    ids = layout.image_ids[start:stop]
    seen = seen_by(query, viewer, ids.tolist())
    points = [
        {"image_id": int(image_id), "x": float(x), "y": float(y), "label": seen.get(int(image_id)) or None}
        for image_id, (x, y) in zip(ids, layout.xy[start:stop].astype(np.float64), strict=True)
    ]
    return points, (int(ids[-1]) if stop < len(layout) and len(ids) else None)


def binary(query: Query, viewer: Writer) -> bytes:
    """Every point at once for the page: header, then ids (int64), x and y (float32), label codes (uint8)."""
    layout = map_of()
    return _columns(layout, label_codes(layout, seen_by(query, viewer)))


def scores_column(query: Query, viewer: Writer, strategy: str) -> bytes:
    """The ranking's score of every map point (layout order) as little-endian float32, NaN where an image has
    no vector: what the page colours the unlabeled points by. `strategy` learns from the labels `viewer` sees.
    Raises SearchUnavailable."""
    layout = map_of()
    seen = seen_by(query, viewer)
    relevant, not_relevant = labeled_ids(seen)
    examples, example_vectors = examples_of(query, ())
    ids, scores = score_collection(
        text=query.text,
        strategy=strategy,
        relevant_ids=relevant,
        not_relevant_ids=not_relevant,
        example_ids=examples,
        example_vectors=example_vectors,
    )
    order = np.argsort(ids)
    where = np.searchsorted(ids[order], layout.image_ids)
    where = np.minimum(where, max(len(ids) - 1, 0))
    column = np.full(len(layout), np.nan, dtype="<f4")
    if len(ids):
        found = ids[order][where] == layout.image_ids
        column[found] = scores[order][where[found]]
    return column.tobytes()


def collection_binary(sight: visibility.Sight) -> bytes:
    """The whole collection's map for staff, in binary()'s form: 1 where some query labeled the image relevant,
    2 where queries labeled it and none relevant, 0 elsewhere; pairs sealed to the viewer are left out."""
    layout = map_of()
    pairs = sight.labels(Label.objects.exclude(value="")).values_list("image_id", "value")
    seen: dict[int, str] = {}
    for image_id, value in pairs.iterator(chunk_size=20_000):
        if seen.get(image_id) != LabelValue.RELEVANT:
            seen[image_id] = LabelValue.RELEVANT if value == LabelValue.RELEVANT else LabelValue.NOT_RELEVANT
    return _columns(layout, label_codes(layout, seen))


def _columns(layout: Layout, codes: np.ndarray) -> bytes:
    version = layout.version.encode("ascii")
    header = BINARY_HEADER.pack(BINARY_MAGIC, len(layout), len(version)) + version
    header += b"\0" * (-len(header) % 8)  # the int64 column starts 8-aligned
    xy = np.ascontiguousarray(layout.xy, dtype="<f4")
    return b"".join(
        (
            header,
            np.ascontiguousarray(layout.image_ids, dtype="<i8").tobytes(),
            np.ascontiguousarray(xy[:, 0]).tobytes(),
            np.ascontiguousarray(xy[:, 1]).tobytes(),
            codes.tobytes(),
        )
    )


@dataclass(frozen=True)
class Hint:
    """A cluster of the map worth a look: unlabeled images where the labels so far say relevant, or a cluster
    beside the relevant ones that nobody has labeled."""

    text: str
    within: str  # the cluster's outline (its convex hull) as the address's within=
    unlabeled: int


HINTS = 4


def cluster_hints(query: Query, viewer: Writer, seen: Mapping[int, str]) -> list[Hint]:
    """At most HINTS hints for the map panel, from the map's regions (search/layout.py) and the labels `viewer`
    sees; none before a map exists or a relevant image is found."""
    try:
        layout = map_of()
    except SearchUnavailable:
        return []
    if layout.regions is None or not len(layout):
        return []
    codes = label_codes(layout, seen)
    regions = layout.regions
    total, centres, members = _region_sizes_and_centres(layout)
    count = len(total)
    marked = np.flatnonzero(codes)  # only the labeled points are counted: a few thousand of a million
    labeled = np.bincount(regions[marked], minlength=count)
    relevant = np.bincount(regions[marked[codes[marked] == LABEL_CODES[LabelValue.RELEVANT]]], minlength=count)
    unlabeled = total - labeled
    hints: list[Hint] = []
    # Clusters where most labels so far are relevant and images wait: label on inside them.
    promising = np.flatnonzero((relevant >= 2) & (2 * relevant >= labeled) & (unlabeled > 0))
    for region in promising[np.argsort(-(relevant[promising] / labeled[promising]) * unlabeled[promising])][:2]:
        hints.append(
            Hint(
                f"{unlabeled[region]:,} unlabeled images in a cluster where {relevant[region]} of "
                f"{labeled[region]} labeled are relevant",
                _outline(layout.xy[members(region)]),
                int(unlabeled[region]),
            )
        )
    # Clusters nobody has labeled, nearest on the map to the relevant images found: where a ranking that found
    # one cluster does not look.
    found = layout.xy[marked[codes[marked] == LABEL_CODES[LabelValue.RELEVANT]]]
    untouched = np.flatnonzero(labeled == 0)
    if len(found) and len(untouched):
        distance = np.min(np.linalg.norm(centres[untouched][:, None, :] - found[None, :200, :], axis=2), axis=1)
        for k in np.argsort(distance)[: HINTS - len(hints)]:
            region = untouched[k]
            hints.append(
                Hint(
                    f"{total[region]:,} images in a cluster beside your relevant ones that nobody has labeled",
                    _outline(layout.xy[members(region)]),
                    int(total[region]),
                )
            )
    return hints


_region_cache: dict[str, tuple[np.ndarray, np.ndarray, Callable[[int], np.ndarray]]] = {}


def _region_sizes_and_centres(layout: Layout) -> tuple[np.ndarray, np.ndarray, Callable[[int], np.ndarray]]:
    """Each region's size and centre, and a function giving a region's rows: computed once per map version in
    this process (passes over every point: tens of milliseconds at 1M, too much for every page view)."""
    cached = _region_cache.get(layout.version)
    if cached is None:
        assert layout.regions is not None
        count = int(layout.regions.max()) + 1
        total = np.bincount(layout.regions, minlength=count)
        sums = [np.bincount(layout.regions, weights=layout.xy[:, axis], minlength=count) for axis in (0, 1)]
        order = np.argsort(layout.regions, kind="stable")
        starts = np.concatenate([[0], np.cumsum(total)])

        def members(region: int) -> np.ndarray:
            rows: np.ndarray = order[starts[region] : starts[region + 1]]
            return rows

        cached = (total, np.column_stack(sums) / np.maximum(total, 1)[:, None], members)
        _region_cache.clear()  # one map version at a time
        _region_cache[layout.version] = cached
    return cached


def _outline(points: np.ndarray) -> str:
    """A cluster's convex hull, a little widened so that its edge points fall inside, as within= text."""
    from scipy.spatial import ConvexHull, QhullError  # SciPy loads only where a hint is drawn

    centre = points.mean(axis=0)
    try:
        corners = points[ConvexHull(points).vertices]
    except (QhullError, ValueError):  # fewer than three points, or all on one line: a small square around them
        low, high = points.min(axis=0) - 0.5, points.max(axis=0) + 0.5
        corners = np.array([[low[0], low[1]], [high[0], low[1]], [high[0], high[1]], [low[0], high[1]]])
    corners = centre + (corners - centre) * 1.02 + np.sign(corners - centre) * 0.05
    return ",".join(f"{value:.4f}" for corner in corners for value in corner)
