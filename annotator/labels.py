"""Changing labels. Every write goes through here so that each change leaves a LabelEvent.

Views, the API, the admin, commands and importers all call these functions; none of
them writes Label rows directly (annotator.models refuses writes made elsewhere).

Provenance kept per event: who, when, from where (`source`), how long the annotator
looked before deciding (`lead_time_ms`, sent by the labeling page), and which import
wrote it (`import_batch`).
"""

from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import islice

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import connection, transaction
from django.utils import timezone

from catalog.models import ROWS_PER_STATEMENT

from .models import ImportBatch, Label, LabelEvent, LabelSource, LabelValue, Query, recording_label_changes

# Who writes: a user (an annotator, staff), or None for the system itself (an import, a command).
Writer = User | None  # settings.AUTH_USER_MODEL is Django's User

# A decision that took longer than a day is a tab left open, not a lead time.
MAX_LEAD_TIME_MS = 24 * 3600 * 1000

# Who may lock a query, still change a locked one, and remove another annotator's label: staff allowed to
# change queries.
MANAGE_QUERIES = "annotator.change_query"
LOCKED_MESSAGE = "Query {id} is marked done and locked by staff: ask them to reopen it."


class LabelRefused(PermissionDenied):
    """A label write the project's rules refuse; the text says why. Views answer 403 with it, and so does
    DRF (it turns Django's PermissionDenied into a 403 that keeps the message)."""


def may_manage(user: Writer) -> bool:
    return user is not None and user.has_perm(MANAGE_QUERIES)


def locked_for(query: Query, user: Writer) -> bool:
    """Whether `user` is held off `query`'s labels by its lock (what the pages show as locked)."""
    return query.locked and not may_manage(user)


def check_writable(query_ids: Iterable[int], user: Writer) -> None:
    """Raise LabelRefused when `user` may not change labels of one of `query_ids`: a locked query is staff's
    alone. The one rule every write path meets, because every write path comes through this module (the
    page, the API, Submit, the admin, a confirmed pre-label). `user` None is the system itself (an import or
    a command an operator runs), which the lock does not hold off."""
    if user is None or may_manage(user):
        return
    locked = Query.objects.filter(pk__in=set(query_ids), locked=True).order_by("pk").values_list("pk", flat=True)
    if (first := locked.first()) is not None:  # query ids start at 0 in some files
        raise LabelRefused(LOCKED_MESSAGE.format(id=first))


@dataclass(frozen=True)
class LabelChange:
    """One label an annotator sets: `value` "" clears it. `lead_time_ms`: how long they looked first."""

    image_id: int
    value: str
    lead_time_ms: int | None = None


@dataclass(frozen=True)
class Saved:
    """What became of one LabelChange: `changed` is False when the label already had that value."""

    image_id: int
    value: str
    changed: bool


def set_labels(
    *,
    query_id: int,
    changes: Sequence[LabelChange],
    user: Writer = None,
    source: str,
    import_batch: ImportBatch | None = None,
) -> list[Saved]:
    """Set (or, with value "", clear) labels of one query, all in one transaction, recording each change.

    The one write path for labels an annotator sets: the labeling page's saves and the API's, one label or
    5,000, go through here. It reads every label concerned in one SELECT (locking the rows: concurrent
    writers queue, the later write wins, both changes stay in the history) and writes with one statement per
    kind of change. Changes apply in the order given, so an image listed twice ends with its last value and
    both events; `import_batch` is recorded on each event an import writes. Returns one Saved per change,
    in order. Raises ValueError for a bad value, source or lead
    time and LabelRefused (nothing written) when the lock or another annotator's label forbids a change.
    """
    for change in changes:
        if change.value:
            _check_value(change.value)
        _check_lead_time(change.lead_time_ms)
    _check_source(source)
    by_image: dict[int, list[LabelChange]] = defaultdict(list)
    for change in changes:
        by_image[change.image_id].append(change)
    with transaction.atomic(), recording_label_changes():
        check_writable([query_id], user)
        stored = _lock(query_id, by_image)
        plans = {image_id: _replay(stored.get(image_id), todo, user) for image_id, todo in by_image.items()}
        created = [(image_id, plan.value) for image_id, plan in plans.items() if image_id not in stored and plan.value]
        raced = {image_id for image_id, _ in created} - set(_insert_absent(query_id, created, user))
        if raced:  # another writer created these since the SELECT: lock their rows and replay on them
            stored.update(_lock(query_id, raced))
            plans.update({image_id: _replay(stored[image_id], by_image[image_id], user) for image_id in raced})
        _write_plans(query_id, stored, plans, user, source, import_batch)
    changed = {image_id: iter(plan.changed) for image_id, plan in plans.items()}
    return [Saved(change.image_id, change.value, next(changed[change.image_id])) for change in changes]


@dataclass
class _Plan:
    """One image's labels replayed in memory: its final value ("" for none), the events, and for each
    change whether it changed anything."""

    value: str
    owner_id: int | None
    events: list[tuple[str, str, int | None]]  # (old value, new value, lead time)
    changed: list[bool]


def _replay(label: Label | None, changes: list[LabelChange], user: Writer) -> _Plan:
    plan = _Plan(label.value if label else "", label.annotator_id if label else None, [], [])
    user_id = user.pk if user is not None else None
    for change in changes:
        if change.value == plan.value:
            plan.changed.append(False)
            continue
        if not change.value and plan.owner_id not in (None, user_id) and not may_manage(user):
            raise LabelRefused(
                f"The label of image {change.image_id} is another annotator's: only staff may remove it "
                "(you may set your own value instead)."
            )
        lead_time_ms = _check_lead_time(change.lead_time_ms) if change.value else None
        plan.events.append((plan.value, change.value, lead_time_ms))
        plan.changed.append(True)
        plan.value, plan.owner_id = change.value, (user_id if change.value else None)
    return plan


def _lock(query_id: int, image_ids: Iterable[int]) -> dict[int, Label]:
    """The stored labels of these images for the query, their rows locked until the transaction ends."""
    found = Label.objects.select_for_update().filter(query_id=query_id, image_id__in=list(image_ids))
    return {label.image_id: label for label in found}


def _write_plans(
    query_id: int,
    stored: dict[int, Label],
    plans: dict[int, _Plan],
    user: Writer,
    source: str,
    import_batch: ImportBatch | None,
) -> None:
    """Updates and removals of rows that existed (new rows are already inserted), and every event."""
    now = timezone.now()
    updated, removed = [], []
    for image_id, plan in plans.items():
        label = stored.get(image_id)
        if label is None or not plan.events:
            continue
        if not plan.value:
            removed.append(label.pk)
        elif plan.value != label.value or label.annotator_id != (user.pk if user else None):
            label.value, label.annotator, label.updated_at = plan.value, user, now  # bulk_update skips auto_now
            updated.append(label)
    Label.objects.bulk_update(updated, ["value", "annotator", "updated_at"], batch_size=ROWS_PER_STATEMENT // 4)
    Label.objects.filter(pk__in=removed).delete()
    LabelEvent.objects.bulk_create(
        LabelEvent(
            query_id=query_id,
            image_id=image_id,
            old_value=old,
            new_value=new,
            user=user,
            source=source,
            lead_time_ms=lead_time_ms,
            import_batch=import_batch,
        )
        for image_id, plan in plans.items()
        for old, new, lead_time_ms in plan.events
    )


def set_label(
    *, query_id: int, image_id: int, value: str, user: Writer = None, source: str, lead_time_ms: int | None = None
) -> tuple[Label, bool]:
    """Set the label of one image for one query (set_labels with one change). Returns (label, changed)."""
    (saved,) = set_labels(
        query_id=query_id, changes=[LabelChange(image_id, value, lead_time_ms)], user=user, source=source
    )
    return Label.objects.get(query_id=query_id, image_id=image_id), saved.changed


def clear_label(*, query_id: int, image_id: int, user: Writer = None, source: str) -> bool:
    """Remove a label (the image goes back to "not yet seen"), recording it. Returns whether one existed.

    An annotator removes only their own labels (or unattributed ones); another annotator's label is
    removed by staff, or replaced by setting a value, which the history keeps as a change."""
    (saved,) = set_labels(query_id=query_id, changes=[LabelChange(image_id, "")], user=user, source=source)
    return saved.changed


def clear_labels(labels: Iterable[Label], *, user: Writer = None, source: str) -> int:
    """Remove several labels in one transaction (the admin's "delete selected"); returns how many."""
    _check_source(source)
    with transaction.atomic():
        return sum(
            clear_label(query_id=label.query_id, image_id=label.image_id, user=user, source=source) for label in labels
        )


def set_labels_in_bulk(
    pairs: Iterable[tuple[int, int]],
    *,
    value: str,
    user: Writer = None,
    source: str,
    import_batch: ImportBatch | None = None,
    batch_size: int = ROWS_PER_STATEMENT,
) -> int:
    """Give many (query_id, image_id) pairs the same label; returns how many labels changed.

    Used by the relevant-label import (annotator/importers.py): set_labels for each query's pairs, read
    `batch_size` pairs at a time. All pairs land or none do. Pairs that already carry `value` are left
    alone, so running the same import twice changes nothing. `import_batch` is recorded on every event.
    """
    _check_value(value)
    changed = 0
    remaining = iter(pairs)
    with transaction.atomic():
        while chunk := list(islice(remaining, batch_size)):
            by_query: dict[int, list[LabelChange]] = defaultdict(list)
            for query_id, image_id in chunk:
                by_query[query_id].append(LabelChange(image_id, value))
            for query_id, changes in by_query.items():
                saved = set_labels(
                    query_id=query_id, changes=changes, user=user, source=source, import_batch=import_batch
                )
                changed += sum(result.changed for result in saved)
    return changed


def label_unlabeled(
    query_id: int, image_ids: Iterable[int], *, value: str, user: Writer = None, source: str
) -> list[int]:
    """Give `value` to those of `image_ids` that have no label for the query yet, in one transaction
    (the annotation tool's Submit: every image shown and not labeled becomes not relevant).

    Labels already there are kept, whoever wrote them and when: rows are inserted only where
    none exists (INSERT ... ON CONFLICT DO NOTHING), so two Submits of the same images, or a
    Submit racing a click, never collide; events are written only for the rows this call
    inserted. Returns the ids of the images it labeled, in the order given.
    """
    _check_value(value)
    _check_source(source)
    image_ids = list(dict.fromkeys(int(image_id) for image_id in image_ids))
    with transaction.atomic(), recording_label_changes():
        check_writable([query_id], user)
        written = _insert_absent(query_id, [(image_id, value) for image_id in image_ids], user)
        LabelEvent.objects.bulk_create(
            LabelEvent(query_id=query_id, image_id=image_id, old_value="", new_value=value, user=user, source=source)
            for image_id in written
        )
    inserted = set(written)
    return [image_id for image_id in image_ids if image_id in inserted]


def _insert_absent(query_id: int, rows: list[tuple[int, str]], user: Writer) -> list[int]:
    """Insert a label (image id, value) for each image that has none for the query; return the ids
    inserted (a row another writer inserted first is left alone).

    Django's bulk_create(ignore_conflicts=True) cannot say which rows it inserted, and the events
    must name exactly those, so this is one statement of SQL that PostgreSQL and SQLite (3.35 and
    later) both speak.
    """
    table = connection.ops.quote_name(Label._meta.db_table)
    now = timezone.now()
    user_id = user.pk if user is not None else None
    inserted: list[int] = []
    per_statement = ROWS_PER_STATEMENT // 6  # six parameters a row, within SQLite's 32,766
    for start in range(0, len(rows), per_statement):
        chunk = rows[start : start + per_statement]
        placeholders = ", ".join(["(%s, %s, %s, %s, %s, %s)"] * len(chunk))
        parameters = [item for image_id, value in chunk for item in (query_id, image_id, value, user_id, now, now)]
        with connection.cursor() as cursor:
            cursor.execute(
                f"INSERT INTO {table} (query_id, image_id, value, annotator_id, created_at, updated_at) "
                f"VALUES {placeholders} ON CONFLICT (query_id, image_id) DO NOTHING RETURNING image_id",
                parameters,
            )
            inserted += [row[0] for row in cursor.fetchall()]
    return inserted


def _check_value(value: str) -> None:
    if value not in LabelValue.values:
        raise ValueError(f"{value!r} is not a label; use one of {', '.join(LabelValue.values)}.")


def _check_source(source: str) -> None:
    if source not in LabelSource.values:
        raise ValueError(f"{source!r} is not a label source; use one of {', '.join(LabelSource.values)}.")


def _check_lead_time(lead_time_ms: object) -> int | None:
    if lead_time_ms is None:
        return None
    if isinstance(lead_time_ms, bool) or not isinstance(lead_time_ms, int) or lead_time_ms < 0:
        raise ValueError(f"lead_time_ms must be a whole number of milliseconds, not {lead_time_ms!r}.")
    return min(lead_time_ms, MAX_LEAD_TIME_MS)
