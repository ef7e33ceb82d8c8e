"""The team panel of a query's dashboard page: who is assigned, its overlap sample, agreement, disagreements
and the judge panel.

The agreement figures carry bootstrap intervals (1,000 resamplings of the items, the CLI's): they are computed
in the background (annotator.tasks.refresh_agreement) and cached until the query's judgments change; the
page says "computing…" and asks again until they are there, as the side pane does for its figures.
"""

from typing import Any

from django.core.cache import cache
from django.db.models import Count, Max

from annotator.labels import selectors
from annotator.models import Judgment, Query
from annotator.team import agreement
from common import background

# annotator/tasks.py: computes and caches a query's agreement figures (refresh below).
AGREEMENT_TASK = "annotator.refresh_agreement"
DAY = 24 * 3600


def team_panel(query: Query) -> dict[str, Any]:
    """The query's team panel: who is assigned, its overlap sample, the agreement figures and the pairs (None
    with `computing` while the background works them out), the disagreements waiting and the judge panel."""
    key = _key(query)
    found = cache.get(key)
    if found is None:
        background.submit_when_polled(AGREEMENT_TASK, query.pk, key=key)
    return {
        "assigned": selectors.assignments_by_query([query]).get(query.pk, []),
        "overlap": query.overlap.count(),
        "computing": found is None,
        **(found or {"figures": None, "pairs": None}),
        "pending": len(selectors.disagreements(query, pending_only=True)),
        "judge_panel": agreement.judge_panel(query),
    }


def team_figures(query: Query) -> dict[str, Any]:
    """Agreement between the query's annotators, computed now: the figures with their bootstrap intervals (the
    intervals `manage.py agreement` gives for these items) and each pair's, from the blind votes."""
    votes = agreement.votes_of(agreement.counted_votes([query.pk]))
    return {"figures": agreement.reliability(votes), "pairs": agreement.pairs(votes)}


def refresh(query_id: int) -> None:
    """Compute and cache the team figures of `query_id` (the background half of team_panel)."""
    query = Query.objects.get(pk=query_id)
    cache.set(_key(query), team_figures(query), timeout=DAY)


def _key(query: Query) -> str:
    """A cache key that changes with the query's judgments: how many, and the last change (a clear deletes one)."""
    judged = Judgment.objects.filter(query=query).aggregate(count=Count("id"), last=Max("updated_at"))
    last = judged["last"].timestamp() if judged["last"] else None
    return f"quire:agreement:{query.pk}:{judged['count']}:{last}"
