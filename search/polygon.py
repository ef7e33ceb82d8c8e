"""A lasso or a box on the map: a simple polygon in the map's coordinates, read from `x1,y1,x2,y2,...`.

Inside means inside or on the boundary (a point on an edge or a vertex is selected: the user drew through it).
A polygon whose edges cross is refused rather than guessed at: "inside" has two answers there (even-odd and
non-zero winding disagree), and the page tells the annotator to draw a loop that does not cross itself.
"""

from dataclasses import dataclass
from typing import TypeAlias

import numpy as np

Row: TypeAlias = np.ndarray  # one number per pair of edges (crosses_itself)

MIN_VERTICES = 3
# A lasso travels in a GET's address (within=), and gunicorn refuses a request line over limit_request_line
# (quire/gunicorn_hooks.py sets its most, 8,190 bytes) with its own 414 page. 150 vertices at nine decimals,
# their commas percent-encoded, take about 4,700 bytes: they fit with the rest of the address. The page simplifies a
# hand-drawn lasso to 100 (static/js/labeling/map-view.js); tests/search/test_gunicorn_lasso.py sends 150 through
# gunicorn.
MAX_VERTICES = 150
MAX_TEXT = 40_000  # characters of the parameter: refused with a sentence where a server lets a longer one through


class BadPolygon(ValueError):
    """The polygon cannot be used; the text says what to fix."""


@dataclass(frozen=True)
class Polygon:
    xs: np.ndarray  # float64 (n,)
    ys: np.ndarray

    def text(self) -> str:
        """The `within=` form of this polygon (what the page keeps in its address)."""
        return ",".join(f"{value:g}" for pair in zip(self.xs, self.ys, strict=True) for value in pair)

    def contains(self, xy: np.ndarray) -> np.ndarray:
        """A boolean mask of the rows of `xy` (n, 2) inside the polygon or on its boundary."""
        points = np.asarray(xy, dtype=np.float64)
        inside = np.zeros(len(points), dtype=bool)
        if not len(points):
            return inside
        # Only points in the bounding box can be inside: at 1M points a lasso's box holds a small part.
        box = (
            (points[:, 0] >= self.xs.min())
            & (points[:, 0] <= self.xs.max())
            & (points[:, 1] >= self.ys.min())
            & (points[:, 1] <= self.ys.max())
        )
        rows = np.flatnonzero(box)
        px, py = points[rows, 0], points[rows, 1]
        crossing = np.zeros(len(rows), dtype=bool)
        boundary = np.zeros(len(rows), dtype=bool)
        x1, y1 = self.xs, self.ys
        x2, y2 = np.roll(self.xs, -1), np.roll(self.ys, -1)
        for ax, ay, bx, by in zip(x1, y1, x2, y2, strict=True):
            # On this edge: collinear (cross product zero, to rounding) and within its extent.
            cross = (bx - ax) * (py - ay) - (by - ay) * (px - ax)
            scale = max(abs(bx - ax), abs(by - ay), 1e-300)
            boundary |= (
                (np.abs(cross) <= 1e-9 * scale * np.maximum(1.0, np.hypot(px - ax, py - ay)))
                & (px >= min(ax, bx))
                & (px <= max(ax, bx))
                & (py >= min(ay, by))
                & (py <= max(ay, by))
            )
            # Even-odd ray casting (a ray to +x; the half-open rule counts a vertex once).
            if ay != by:
                straddles = (ay > py) != (by > py)
                at_x = ax + (py - ay) * (bx - ax) / (by - ay)
                crossing ^= straddles & (px < at_x)
        inside[rows] = crossing | boundary
        return inside


def parse(text: str) -> Polygon:
    """The polygon of a `within=` parameter. BadPolygon (a sentence saying what to fix) for anything else."""
    numbers = _numbers(text)
    if len(numbers) % 2:
        raise BadPolygon(f"within= needs pairs of numbers (x,y); it has {len(numbers)}, an odd count.")
    count = len(numbers) // 2
    if count < MIN_VERTICES:
        raise BadPolygon(f"A polygon needs at least {MIN_VERTICES} vertices; within= has {count}.")
    if count > MAX_VERTICES:
        raise BadPolygon(f"A polygon has at most {MAX_VERTICES:,} vertices; within= has {count:,}: simplify it.")
    xs, ys = numbers[0::2], numbers[1::2]
    if len(xs) > 3 and xs[0] == xs[-1] and ys[0] == ys[-1]:  # closed by repeating the first vertex
        xs, ys = xs[:-1], ys[:-1]
    if crosses_itself(xs, ys):
        raise BadPolygon("The polygon crosses itself: draw a loop whose edges do not cross.")
    area = 0.5 * float(np.dot(xs, np.roll(ys, -1)) - np.dot(ys, np.roll(xs, -1)))
    if area == 0:
        raise BadPolygon("The polygon encloses no area (its vertices lie on one line): draw around the points.")
    return Polygon(xs, ys)


def _numbers(text: str) -> np.ndarray:
    """The numbers of a `within=` parameter, finite; BadPolygon for text that is not a list of them."""
    if len(text) > MAX_TEXT:
        raise BadPolygon(
            f"within= is too long ({len(text):,} characters): a polygon has at most {MAX_VERTICES:,} vertices."
        )
    parts = [part.strip() for part in text.split(",")]
    if any(not part for part in parts):
        raise BadPolygon("within= is a comma-separated list of numbers x1,y1,x2,y2,... with no empty entries.")
    try:
        numbers = np.array([float(part) for part in parts], dtype=np.float64)
    except ValueError:
        raise BadPolygon("within= takes numbers only: x1,y1,x2,y2,... in the map's coordinates.") from None
    if not np.isfinite(numbers).all():
        raise BadPolygon("within= takes finite numbers: NaN and infinity are not points on the map.")
    return numbers


def crosses_itself(xs: np.ndarray, ys: np.ndarray) -> bool:
    """Whether two non-adjacent edges meet (proper crossings and touching both count)."""
    n = len(xs)
    ax, ay = xs, ys
    bx, by = np.roll(xs, -1), np.roll(ys, -1)
    i, j = np.triu_indices(n, k=2)
    keep = ~((i == 0) & (j == n - 1))  # the last edge and the first share vertex 0
    i, j = i[keep], j[keep]

    def orient(px: Row, py: Row, qx: Row, qy: Row, rx: Row, ry: Row) -> Row:
        turn: np.ndarray = np.sign((qx - px) * (ry - py) - (qy - py) * (rx - px))
        return turn

    def on_segment(px: Row, py: Row, qx: Row, qy: Row, rx: Row, ry: Row) -> Row:
        """r, collinear with p-q, lies within the segment's box."""
        within: np.ndarray = (
            (np.minimum(px, qx) <= rx)
            & (rx <= np.maximum(px, qx))
            & (np.minimum(py, qy) <= ry)
            & (ry <= np.maximum(py, qy))
        )
        return within

    p1x, p1y, q1x, q1y = ax[i], ay[i], bx[i], by[i]
    p2x, p2y, q2x, q2y = ax[j], ay[j], bx[j], by[j]
    o1 = orient(p1x, p1y, q1x, q1y, p2x, p2y)
    o2 = orient(p1x, p1y, q1x, q1y, q2x, q2y)
    o3 = orient(p2x, p2y, q2x, q2y, p1x, p1y)
    o4 = orient(p2x, p2y, q2x, q2y, q1x, q1y)
    proper = (o1 != o2) & (o3 != o4) & (o1 != 0) & (o2 != 0) & (o3 != 0) & (o4 != 0)
    touching = (
        ((o1 == 0) & on_segment(p1x, p1y, q1x, q1y, p2x, p2y))
        | ((o2 == 0) & on_segment(p1x, p1y, q1x, q1y, q2x, q2y))
        | ((o3 == 0) & on_segment(p2x, p2y, q2x, q2y, p1x, p1y))
        | ((o4 == 0) & on_segment(p2x, p2y, q2x, q2y, q1x, q1y))
    )
    return bool((proper | touching).any())
