"""The team panel of a query's dashboard page: who is assigned, its overlap sample, agreement, disagreements
and the judge panel.

The agreement figures carry bootstrap intervals (1,000 resamplings of the items, the CLI's): they are computed
in the background (annotator.tasks.refresh_agreement) and cached until the query's judgments change; the
page says "computing…" and asks again until they are there, as the side pane does for its figures.
"""

from typing import Any

from annotator.labels import selectors
from annotator.labels.tallies import change_marker
from annotator.models import Query
from annotator.team import agreement
from common.cached_figures import BackgroundFigure

# annotator/tasks.py: computes and caches a query's agreement figures (refresh below).
AGREEMENT_TASK = "annotator.refresh_agreement"
AGREEMENT = BackgroundFigure("agreement", AGREEMENT_TASK)


def team_panel(query: Query) -> dict[str, Any]:
    """The query's team panel: who is assigned, its overlap sample, the agreement figures and the pairs (None
    with `computing` while the background works them out), the disagreements waiting and the judge panel."""
    have, found = AGREEMENT.cached(_parts(query.pk), query.pk)
    return {
        "assigned": selectors.assignments_by_query([query]).get(query.pk, []),
        "overlap": query.overlap.count(),
        "computing": not have,
        **(found if have else {"figures": None, "pairs": None}),
        "pending": len(selectors.disagreements(query, pending_only=True)),
        "judge_panel": agreement.judge_panel(query),
    }


def team_figures(query: Query) -> dict[str, Any]:
    """Agreement between the query's annotators, computed now: the figures with their bootstrap intervals (the
    intervals `manage.py agreement` gives for these items) and each pair's, from the blind votes."""
    votes = agreement.votes_of(agreement.counted_votes([query.pk]))
    return {"figures": agreement.reliability(votes), "pairs": agreement.pairs(votes)}


def refresh(query_id: int) -> None:
    """Compute and cache the team figures of `query_id` (the background half of team_panel), under the marker read
    before computing."""
    parts = _parts(query_id)
    AGREEMENT.store(parts, team_figures(Query.objects.get(pk=query_id)))


def _parts(query_id: int) -> tuple[int, str]:
    """What the figures are cached by: the query, and its labels' change marker."""
    return query_id, change_marker([query_id])
