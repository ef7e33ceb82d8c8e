"""Template filters of the evaluation pages: a metric as the papers print it."""

from typing import Any

from django import template

from evaluation.metrics import PERCENT_METRICS

register = template.Library()


@register.filter
def metric(scores: dict[str, Any], name: str) -> str:
    """A metric as the papers print it: AP, nDCG and oracle x100 with one decimal, the rest as fractions."""
    if scores.get("no_positives"):
        return "no positives"
    value = scores.get(name)
    if value is None:
        return "–"
    return f"{100 * value:.1f}" if name in PERCENT_METRICS else f"{value:.3f}"


@register.filter
def interval(uncertainty: dict[str, Any], name: str) -> str:
    low, high = uncertainty.get(name, {}).get("ci95", (0, 0))
    return f"{100 * low:.1f}–{100 * high:.1f}" if name in PERCENT_METRICS else f"{low:.3f}–{high:.3f}"


@register.filter
def percent(value: float) -> str:
    return f"{100 * value:.1f}"


@register.filter
def get(mapping: dict[Any, Any], key: Any) -> Any:
    return mapping.get(key, "")


@register.filter
def ratio_of(row: dict[str, Any], strategy: str) -> float | None:
    """A simulation row's ratio of `strategy`'s labels to the baseline's (None when the baseline never got
    there; when the strategy did not, the budget's ratio: a lower bound)."""
    return row.get(f"{strategy}_ratio")


@register.filter
def bound_of(row: dict[str, Any], strategy: str) -> str:
    """ "≥ " or "≤ " before a simulation row's ratio that is a bound (one of the two never reached the target)."""
    return {">=": "≥ ", "<=": "≤ "}.get(row.get(f"{strategy}_bound", ""), "")


@register.filter
def missed_by(row: dict[str, Any], strategy: str) -> bool:
    """Whether `strategy` never reached the target on this simulation row (its ratio is then a lower bound)."""
    return bool(row.get(f"{strategy}_missed"))
