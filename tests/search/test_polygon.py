"""The lasso's polygon (search/polygon.py): which points are inside, and what is refused with a sentence."""

import numpy as np
import pytest

from search.polygon import MAX_VERTICES, BadPolygon, crosses_itself, parse


def square():
    return parse("0,0,10,0,10,10,0,10")


def test_points_inside_outside_on_edges_and_vertices():
    points = np.array(
        [
            [5, 5],  # inside
            [0, 5],  # on the left edge
            [10, 7.5],  # on the right edge
            [5, 0],  # on the bottom edge
            [5, 10],  # on the top edge
            [0, 0],  # a vertex
            [10, 10],  # a vertex
            [10.0001, 5],  # just outside
            [-0.0001, 5],
            [5, 10.0001],
            [20, 20],
            [11, 0],  # on the bottom edge's line, beyond the edge
        ]
    )
    assert square().contains(points).tolist() == [True] * 7 + [False] * 5


def test_a_concave_polygon_leaves_its_notch_out():
    # A "U": the notch between the arms is outside, the arms inside, the notch's floor on the edge inside.
    u = parse("0,0,9,0,9,9,6,9,6,3,3,3,3,9,0,9")
    points = np.array([[1.5, 6], [7.5, 6], [4.5, 6], [4.5, 3], [4.5, 2], [6, 6], [3, 9]])
    assert u.contains(points).tolist() == [True, True, False, True, True, True, True]


def winding(xs, ys, points):
    """A second opinion by another method: the angle the polygon's vertices sweep around each point (2 pi inside,
    0 outside)."""
    dx = xs[None, :] - points[:, :1]
    dy = ys[None, :] - points[:, 1:]
    angles = np.arctan2(dy, dx)
    turns = np.diff(np.concatenate([angles, angles[:, :1]], axis=1), axis=1)
    turns = (turns + np.pi) % (2 * np.pi) - np.pi
    return np.abs(turns.sum(axis=1)) > np.pi


def test_agrees_with_the_winding_number_on_random_points_and_a_star():
    rng = np.random.default_rng(3)
    angles = np.linspace(0, 2 * np.pi, 14, endpoint=False)
    radii = np.where(np.arange(14) % 2 == 0, 40.0, 15.0)
    xs, ys = radii * np.cos(angles) + 3, radii * np.sin(angles) - 7
    star = parse(",".join(f"{float(x)!r},{float(y)!r}" for x, y in zip(xs, ys, strict=True)))
    points = rng.uniform(-50, 50, size=(20_000, 2))
    reference = winding(xs, ys, points)
    assert (star.contains(points) == reference).mean() == 1.0  # random points are never exactly on an edge
    assert 0.1 < reference.mean() < 0.6


def test_the_polygon_may_be_closed_by_repeating_its_first_vertex():
    assert parse("0,0,10,0,10,10,0,10,0,0").contains(np.array([[5, 5], [0, 10]])).all()


@pytest.mark.parametrize(
    "text, says",
    [
        ("0,0,10,10", "at least 3 vertices; within= has 2"),
        ("0,0,10,0,10", "pairs of numbers"),
        ("0,0,10,0,nan,10", "finite numbers"),
        ("0,0,10,0,inf,10", "finite numbers"),
        ("0,0,ten,0,5,10", "numbers only"),
        ("0,0,,0,5,10", "no empty entries"),
        ("0,0,10,0\x00,5,10", "numbers only"),
        ("0,0,10,10,0,10,10,0", "crosses itself"),  # a bow tie
        ("0,0,5,5,10,10", "encloses no area"),
        ("", "no empty entries"),
    ],
)
def test_bad_polygons_are_refused_with_a_sentence(text, says):
    with pytest.raises(BadPolygon, match=says):
        parse(text)


def test_too_many_vertices_are_refused_before_any_work():
    million = ",".join(["1"] * 2_000_000)
    with pytest.raises(BadPolygon, match="too long"):
        parse(million)
    many = ",".join(f"{np.cos(a):.6f},{np.sin(a):.6f}" for a in np.linspace(0, 6.28, MAX_VERTICES + 1))
    with pytest.raises(BadPolygon, match=f"at most {MAX_VERTICES:,} vertices"):
        parse(many)


def test_self_intersection_covers_touching_and_spares_adjacent_edges():
    assert not crosses_itself(np.array([0.0, 10, 10, 0]), np.array([0.0, 0, 10, 10]))
    # The fourth vertex touches the first edge: refused (two readings of "inside").
    assert crosses_itself(np.array([0.0, 10, 10, 5]), np.array([0.0, 0, 10, 0]))
    # A figure eight drawn as a lasso.
    t = np.linspace(0, 2 * np.pi, 60, endpoint=False)
    assert crosses_itself(np.sin(t), np.sin(t) * np.cos(t))
    # A circle drawn as a lasso does not.
    assert not crosses_itself(np.cos(t), np.sin(t))


def test_text_round_trips():
    polygon = parse("0,0,10.5,0,10,10")
    assert parse(polygon.text()).contains(np.array([[5, 1]])).tolist() == [True]
