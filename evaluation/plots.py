"""Small server-side SVG plots for the report pages (no JavaScript charting library needed)."""

from html import escape
from typing import Any


def bars(values: dict[str, float], *, width: int = 560, bar_height: int = 18) -> str:
    """Horizontal bars of AP x100 per group. The labels' column is as wide as the longest label needs (at about
    7 px a character in 12 px type), up to half the plot; a label longer than that ends in "…" and its bar's
    tooltip (SVG <title>) holds it whole."""
    rows = list(values.items())
    height = bar_height * len(rows) + 10
    fits = max((len(label) for label, _ in rows), default=0)
    label_width = min(width // 2, 7 * fits + 10)
    most_chars = (label_width - 10) // 7
    bar_space = width - label_width - 45  # room for the figure after the longest bar
    parts = [f'<svg class="plot" width="{width}" height="{height}" role="img" aria-label="AP by group">']
    for index, (label, value) in enumerate(rows):
        y = 5 + index * bar_height
        length = max(1, bar_space * value)
        shown = label if len(label) <= most_chars else label[: most_chars - 1] + "…"
        parts.append(
            f"<g><title>{escape(label)}: AP {100 * value:.1f}</title>"
            f'<text x="0" y="{y + 13}" font-size="12">{escape(shown)}</text>'
            f'<rect x="{label_width}" y="{y + 2}" width="{length:.1f}" height="{bar_height - 5}" fill="#1a9b4b"/>'
            f'<text x="{label_width + 5 + length:.1f}" y="{y + 13}" font-size="12">{100 * value:.1f}</text></g>'
        )
    parts.append("</svg>")
    return "".join(parts)


def scatter(points: list[tuple[float, float]], *, x_label: str, y_label: str, size: int = 320) -> str:
    """Per-query AP of run B (x) against run A (y), with the diagonal: points above it are A's wins."""
    pad = 36
    span = size - 2 * pad
    parts = [
        f'<svg class="plot" width="{size}" height="{size}" role="img" aria-label="per-query AP scatter">',
        f'<rect x="{pad}" y="{pad}" width="{span}" height="{span}" fill="none" stroke="#999"/>',
        f'<line x1="{pad}" y1="{pad + span}" x2="{pad + span}" y2="{pad}" stroke="#bbb" stroke-dasharray="4"/>',
    ]
    for x, y in points:
        parts.append(
            f'<circle cx="{pad + x * span:.1f}" cy="{pad + (1 - y) * span:.1f}" r="3" '
            'fill="#1f6feb" fill-opacity="0.6"/>'
        )
    parts.append(f'<text x="{pad}" y="{size - 8}" font-size="12">{escape(x_label[:40])} (AP)</text>')
    parts.append(f'<text x="4" y="{pad - 10}" font-size="12">{escape(y_label[:40])} (AP)</text></svg>')
    return "".join(parts)


CURVE_COLOURS = ("#888888", "#1a9b4b", "#1f6feb", "#d4572a", "#8a3ffc", "#b8860b")


def recall_curves(curves: dict[str, list[Any]], *, width: int = 560, height: int = 300) -> str:
    """Mean recall (y, 0 to 1) against labels spent (x), one line per strategy: a standalone SVG
    document (it also renders inline in a page)."""
    pad_left, pad_bottom, pad_top, pad_right = 44, 36, 14, 120
    span_x, span_y = width - pad_left - pad_right, height - pad_top - pad_bottom
    most = max((n for points in curves.values() for n, _ in points), default=1)
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" class="plot" width="{width}" height="{height}" role="img" '
        'aria-label="recall against labels spent, per strategy">',
        f'<rect x="{pad_left}" y="{pad_top}" width="{span_x}" height="{span_y}" fill="none" stroke="#999"/>',
    ]
    for tick in (0.5, 0.9, 0.95):
        y = pad_top + (1 - tick) * span_y
        parts.append(
            f'<line x1="{pad_left}" y1="{y:.1f}" x2="{pad_left + span_x}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text x="4" y="{y + 4:.1f}" font-size="11">{tick:.2f}</text>'
        )
    for index, (strategy, points) in enumerate(curves.items()):
        colour = CURVE_COLOURS[index % len(CURVE_COLOURS)]
        path = " ".join(
            f"{pad_left + span_x * n / most:.1f},{pad_top + (1 - recall) * span_y:.1f}" for n, recall in points
        )
        parts.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="2"/>')
        y = pad_top + 16 * index + 10
        parts.append(
            f'<line x1="{width - pad_right + 10}" y1="{y}" x2="{width - pad_right + 30}" y2="{y}" '
            f'stroke="{colour}" stroke-width="2"/><text x="{width - pad_right + 34}" y="{y + 4}" '
            f'font-size="12">{escape(strategy[:14])}</text>'
        )
    parts.append(
        f'<text x="{pad_left}" y="{height - 8}" font-size="12">labels spent (0 to {most:,})</text>'
        f'<text x="{pad_left + 6}" y="{pad_top + span_y - 6}" font-size="12">mean recall</text></svg>'
    )
    return "".join(parts)
