"""Reading label counts per query: one definition for the query list, the labeling page, the
dashboard, the admin and the API, so that they can never disagree."""

from django.db.models import Count, Max, Q

from .models import Label, LabelValue, Query


def _label_counts():
    return {
        "labeled": Count("labels"),
        "relevant": Count("labels", filter=Q(labels__value=LabelValue.RELEVANT)),
        "not_relevant": Count("labels", filter=Q(labels__value=LabelValue.NOT_RELEVANT)),
        "unsure": Count("labels", filter=Q(labels__value=LabelValue.UNSURE)),
        "last_activity": Max("labels__updated_at"),
    }


def with_label_counts(queries):
    """Queries annotated with labeled, relevant, not_relevant, unsure (counts) and last_activity (a time or None)."""
    return queries.annotate(**_label_counts())


def label_counts(query: Query) -> dict:
    """One query's counts: {"labeled", "relevant", "not_relevant", "unsure", "last_activity"}."""
    return Query.objects.filter(pk=query.pk).aggregate(**_label_counts())


# What the query list and the dashboard can be sorted by: the URL's word -> the field.
QUERY_SORTS = {
    "id": "id",
    "text": "text",
    "status": "status",
    "labeled": "labeled",
    "relevant": "relevant",
    "unsure": "unsure",
    "activity": "last_activity",
    "fully_labeled": "fully_labeled",
}


def sorted_by(queries, sort: str):
    """Order annotated queries by `sort`, a key of QUERY_SORTS with an optional leading "-"
    (descending); an unknown key sorts by id. Ties are ordered by id."""
    field = QUERY_SORTS.get(sort.lstrip("-"), "id")
    return queries.order_by(f"-{field}" if sort.startswith("-") else field, "id")


def annotators_by_query(queries) -> dict[int, list[str]]:
    """{query id: the user names of those who labeled it, sorted} for `queries`."""
    names: dict[int, set[str]] = {}
    for query_id, username in (
        Label.objects.filter(query__in=queries, annotator__isnull=False)
        .values_list("query_id", "annotator__username")
        .distinct()
    ):
        names.setdefault(query_id, set()).add(username)
    return {query_id: sorted(users) for query_id, users in names.items()}
