"""The team panel of a query's dashboard page: who is assigned, its overlap sample, agreement, disagreements
and the judge panel."""

from typing import Any

from annotator.labels import selectors
from annotator.models import Query
from annotator.team import agreement


def team_panel(query: Query) -> dict[str, Any]:
    """The query's team panel: who is assigned, its overlap sample, agreement, disagreements, the judge panel."""
    rows = query.judgments.filter(annotator__isnull=False).values_list("image_id", "annotator__username", "value")
    votes = agreement.votes_of(rows)  # an import's labels are nobody's vote
    return {
        "assigned": selectors.assignments_by_query([query]).get(query.pk, []),
        "overlap": query.overlap.count(),
        "figures": agreement.reliability(votes),  # the intervals `manage.py agreement` gives for these items
        "pairs": agreement.pairs(votes),
        "pending": len(selectors.disagreements(query, pending_only=True)),
        "judge_panel": agreement.judge_panel(query),
    }
