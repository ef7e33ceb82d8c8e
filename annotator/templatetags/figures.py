"""Agreement figures as pages print them: three decimals, "–" where undefined. The figures themselves keep
full precision (agreement.json equals the reference libraries); only the page rounds."""

from django import template

register = template.Library()


@register.filter
def figure(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


@register.filter
def span(interval: list[float] | None) -> str:
    """A bootstrap interval, "0.812 to 0.944"; "" where there is none."""
    return "" if not interval else f"{interval[0]:.3f} to {interval[1]:.3f}"
