"""Small server-side SVG plots for the report pages (no JavaScript charting library needed)."""

from html import escape


def bars(values: dict[str, float], *, width: int = 560, bar_height: int = 18) -> str:
    """Horizontal bars of AP x100 per group."""
    rows = list(values.items())
    height = bar_height * len(rows) + 10
    parts = [f'<svg class="plot" width="{width}" height="{height}" role="img" aria-label="AP by group">']
    for index, (label, value) in enumerate(rows):
        y = 5 + index * bar_height
        length = max(1, (width - 230) * value)
        parts.append(
            f'<text x="0" y="{y + 13}" font-size="12">{escape(label[:28])}</text>'
            f'<rect x="190" y="{y + 2}" width="{length:.1f}" height="{bar_height - 5}" fill="#1a9b4b"/>'
            f'<text x="{195 + length:.1f}" y="{y + 13}" font-size="12">{100 * value:.1f}</text>'
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
