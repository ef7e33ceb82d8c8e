"""Figures as pages print them. Agreement: three decimals, "–" where undefined; the figures themselves keep
full precision (agreement.json equals the reference libraries), only the page rounds. Times: `moment`."""

from datetime import datetime

from django import template
from django.utils import timezone

from annotator.team import costs

register = template.Library()


@register.filter
def figure(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


@register.filter
def duration(seconds: float | None) -> str:
    """Active time as the team page prints it: "1h05m", "12m30s", "–" for none."""
    return "–" if seconds is None else costs.duration(seconds)


@register.filter
def span(interval: list[float] | None) -> str:
    """A bootstrap interval, "0.812 to 0.944"; "" where there is none."""
    return "" if not interval else f"{interval[0]:.3f} to {interval[1]:.3f}"


@register.filter
def moment(value: datetime | None) -> str:
    """A time as the lists of queries print it: "2026-11-26 14:05" in the site's time zone, "–" for none. Django's
    own date rendering (the DATETIME_FORMAT through localization) was a third of the dashboard's rows at 250
    queries (bench/RESULTS.md, issue 41); this is strftime."""
    return "–" if value is None else timezone.localtime(value).strftime("%Y-%m-%d %H:%M")


@register.filter
def percent2(value: float | None) -> str:
    """A confidence or a share as the claims print it: "99.75%" (two decimals, so a tested level is not rounded
    into the stated one); "–" for none."""
    return "–" if value is None else f"{100 * value:.2f}%"
