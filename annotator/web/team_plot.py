"""The team page's plot: each annotator's median seconds per label, day by day, as an SVG drawn here (no plotting
library, no script, no CDN: a few polylines and their labels)."""

from collections import defaultdict
from html import escape
from typing import Any

WIDTH, HEIGHT, LEFT, BOTTOM, TOP, RIGHT = 640, 220, 48, 28, 12, 120
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def seconds_per_label(days: list[dict[str, Any]]) -> str:
    """An SVG of `days` (costs.report's rows: annotator, day, seconds_per_label); "" with fewer than one point, or
    where no label took any time (no lead time recorded: a range, an import), which an axis from 0 to 0 cannot show."""
    days = [row for row in days if row.get("seconds_per_label") is not None]
    top = max((row["seconds_per_label"] for row in days), default=0.0)
    if not top:
        return ""
    dates = sorted({row["day"] for row in days})
    span = WIDTH - LEFT - RIGHT
    # One day: its points in the middle (a line needs two days); more: the first day at the left, the last at the right.
    x_of = {day: LEFT + (span * n / (len(dates) - 1) if len(dates) > 1 else span / 2) for n, day in enumerate(dates)}

    def y(seconds: float) -> float:
        return TOP + (HEIGHT - TOP - BOTTOM) * (1 - seconds / top)

    lines: dict[str, list[str]] = defaultdict(list)
    for row in days:
        lines[row["annotator"]].append(f"{x_of[row['day']]:.1f},{y(row['seconds_per_label']):.1f}")
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" id="seconds-per-label" viewBox="0 0 {WIDTH} {HEIGHT}" role="img" '
        f'width="{WIDTH}" height="{HEIGHT}"><title>Median seconds per label, per annotator and day</title>',
        f'<line x1="{LEFT}" y1="{y(0):.1f}" x2="{WIDTH - RIGHT}" y2="{y(0):.1f}" stroke="#888"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{y(0):.1f}" stroke="#888"/>',
        f'<text x="{LEFT - 4}" y="{TOP + 4}" text-anchor="end" font-size="11">{top:.3g} s</text>',
        f'<text x="{LEFT - 4}" y="{y(0):.1f}" text-anchor="end" font-size="11">0</text>',
    ]
    if len(dates) == 1:
        label = f'x="{x_of[dates[0]]:.1f}" y="{HEIGHT - 8}" text-anchor="middle" font-size="11"'
        parts.append(f"<text {label}>{escape(dates[0])}</text>")
    else:
        parts.append(f'<text x="{LEFT}" y="{HEIGHT - 8}" font-size="11">{escape(dates[0])}</text>')
        parts.append(
            f'<text x="{WIDTH - RIGHT}" y="{HEIGHT - 8}" text-anchor="end" font-size="11">{escape(dates[-1])}</text>'
        )
    for n, (name, points) in enumerate(sorted(lines.items())):
        colour = COLOURS[n % len(COLOURS)]
        parts.append(f'<polyline fill="none" stroke="{colour}" stroke-width="2" points="{" ".join(points)}">'
                     f"<title>{escape(name)}</title></polyline>")  # fmt: skip
        for point in points:
            cx, cy = point.split(",")
            parts.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>')
        key_y = TOP + 14 * (n + 1)
        parts.append(f'<text x="{WIDTH - RIGHT + 8}" y="{key_y}" font-size="11" fill="{colour}">{escape(name)}</text>')
    parts.append("</svg>")
    return "".join(parts)
