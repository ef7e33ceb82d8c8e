"""The per-query counts the dashboard and the query list read, kept in step with every label write.

annotator.labels calls these inside the transaction that changes the labels, so a count is never ahead of or
behind what is stored: QueryTally (final labels by value, and the last change) and QueryAnnotator (each
annotator's judgments). Each write adds its change to the row with one UPDATE (making the row first, the
first time, with INSERT ... ON CONFLICT DO NOTHING, which PostgreSQL and SQLite both speak). The row of a
query is locked until the write commits, so two annotators saving labels of one query queue at this last
statement, not for their whole transaction.
"""

from collections import Counter
from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import connection, transaction
from django.db.models import Count, Max, Sum

from annotator.labels import selectors
from annotator.models import UNDECIDED, Judgment, LabelValue, Query, QueryAnnotator, QueryTally

# The tally's counters, by the final value each counts.
_COUNTERS = {
    LabelValue.RELEVANT: "relevant",
    LabelValue.NOT_RELEVANT: "not_relevant",
    LabelValue.UNSURE: "unsure",
    UNDECIDED: "undecided",
}


def count_final_labels(
    query_id: int, before: Iterable[str], after: Iterable[str], when: datetime, *, events: int = 0
) -> None:
    """Add to the query's tally the change of some final labels from `before` to `after` (their values, ""
    for none or a placeholder) and make `when` its last activity. Called only when those labels changed (a
    label whose decider alone changed moves no count but is activity)."""
    change = Counter(value for value in after if value)
    change.subtract(value for value in before if value)
    deltas = {column: change[value] for value, column in _COUNTERS.items()}
    deltas["labeled"] = sum(deltas.values())
    deltas["changes"] = max(1, events)  # the change marker: by the write's events, in this same statement
    _upsert(QueryTally, ["query_id"], {"query_id": query_id}, deltas, {"last_activity": when})


def count_events(query_id: int, events: int) -> None:
    """Move the query's change marker (QueryTally.changes) by the `events` a write records."""
    if events:  # the counters added as zeros: a new row gets them (they have no default in the database)
        zeros = dict.fromkeys(["labeled", *_COUNTERS.values()], 0)
        _upsert(QueryTally, ["query_id"], {"query_id": query_id}, {**zeros, "changes": events}, {})


def change_marker(query_ids: Iterable[int] | None = None) -> str:
    """A mark that moves with every write of the labels of `query_ids` (None: every query), read from the tallies
    in one statement: what a figure computed in the background is cached by. The count of changes moves with every
    write; the last change's time sets apart two histories that reach the same count (a database restored from a
    backup and written again, while the cache kept figures of the first history)."""
    tallies = QueryTally.objects.all() if query_ids is None else QueryTally.objects.filter(query_id__in=list(query_ids))
    found = tallies.aggregate(total=Sum("changes"), last=Max("last_activity"))
    return f"{found['total'] or 0}-{found['last'].timestamp() if found['last'] else 0}"


def count_judgments(query_id: int, changes: Counter[int]) -> None:
    """Add `changes` ({annotator id: judgments added, negative for removed}) to the query's annotators."""
    for annotator_id, delta in sorted(changes.items()):
        if delta:
            keys = {"query_id": query_id, "annotator_id": annotator_id}
            _upsert(QueryAnnotator, ["query_id", "annotator_id"], keys, {"judgments": delta}, {})


def _upsert(
    model: Any, conflict: list[str], keys: dict[str, Any], added: dict[str, Any], replaced: dict[str, Any]
) -> None:
    """Add `added` to the columns of the row of `keys` and set `replaced`'s, making the row (zeros) first when
    there is none. One UPDATE when the row exists, as it does after a query's first label; not one INSERT ...
    ON CONFLICT DO UPDATE, whose proposed row must pass the table's checks before the conflict is seen (a
    decrement, a label changing from relevant, is a negative count there)."""
    quote = connection.ops.quote_name
    table = quote(model._meta.db_table)
    sets = [f"{quote(c)} = {quote(c)} + %s" for c in added] + [f"{quote(c)} = %s" for c in replaced]
    update = f"UPDATE {table} SET {', '.join(sets)} WHERE " + " AND ".join(f"{quote(c)} = %s" for c in keys)
    parameters = [*added.values(), *replaced.values(), *keys.values()]
    with connection.cursor() as cursor:
        cursor.execute(update, parameters)
        if cursor.rowcount:
            return
        # Django's defaults are not the database's: the new row's counters are given, as zeros. Two writers
        # making it at once: one inserts, the other's insert does nothing, and both add.
        columns = [*keys, *added]
        cursor.execute(
            f"INSERT INTO {table} ({', '.join(map(quote, columns))}) VALUES ({', '.join(['%s'] * len(columns))}) "
            f"ON CONFLICT ({', '.join(map(quote, conflict))}) DO NOTHING",
            [*keys.values(), *[0] * len(added)],
        )
        cursor.execute(update, parameters)


def recount(query_ids: Iterable[int] | None = None) -> int:
    """Count the tallies again from the labels and judgments themselves (all queries, or `query_ids`), in
    one transaction; returns the number of queries counted. For labels written around annotator.labels (SQL
    by hand, a benchmark's bulk load): the write path itself never needs it."""
    queries = Query.objects.all() if query_ids is None else Query.objects.filter(pk__in=list(query_ids))
    names = ["labeled", *_COUNTERS.values()]
    counted = queries.annotate(**selectors.counted_from_labels()).values_list("pk", *names, "last_activity")
    with transaction.atomic():
        # The change marker moves on (never back: a figure cached at an earlier value must not match again).
        marked = dict(QueryTally.objects.filter(query__in=queries).values_list("query_id", "changes"))
        rows = [
            QueryTally(
                query_id=pk, **dict(zip(names, counts, strict=True)), last_activity=last, changes=marked.get(pk, 0) + 1
            )
            for pk, *counts, last in counted
        ]
        QueryTally.objects.filter(query__in=queries).delete()
        QueryTally.objects.bulk_create(rows, batch_size=1000)
        QueryAnnotator.objects.filter(query__in=queries).delete()
        QueryAnnotator.objects.bulk_create(
            (
                QueryAnnotator(query_id=query_id, annotator_id=annotator_id, judgments=n)
                for query_id, annotator_id, n in Judgment.objects.filter(query__in=queries, annotator__isnull=False)
                .order_by()
                .values_list("query_id", "annotator_id")
                .annotate(n=Count("id"))
            ),
            batch_size=1000,
        )
    return len(rows)
