"""Changing labels. Every write goes through here so that each change leaves a LabelEvent.

Views, the API, the admin, commands and importers all call these functions; none of
them writes Judgment or Label rows directly (annotator.models refuses writes made elsewhere).

A user's label is their Judgment: it never overwrites another annotator's. After each write the images'
final labels (Label) are derived again from all their judgments by the query's rule (annotator.labels.final), so
the final label is always what the judgments and adjudications say. Writers of the same images queue on
their final-label rows, which every write locks first (a placeholder row is inserted where none exists),
so two annotators judging the same image at once both count.

Provenance kept per event: who, when, from where (`source`), how long the annotator
looked before deciding (`lead_time_ms`, sent by the labeling page), and which import
wrote it (`import_batch`).
"""

from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from itertools import islice
from typing import Any

from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.db import DatabaseError, connection, models, transaction
from django.db.models import Exists, OuterRef
from django.dispatch import Signal
from django.utils import timezone

from annotator.labels import final, sealed, tallies
from annotator.labels.checked import CHECKED, decided_check_sampling, sampled_images
from annotator.labels.sealed import Writer
from annotator.models import (
    CheckImage,
    CompletenessCheck,
    Decision,
    ImportBatch,
    Judgment,
    Label,
    LabelEvent,
    LabelSource,
    LabelValue,
    OverlapImage,
    Query,
    recording_label_changes,
)
from catalog.models import ROWS_PER_STATEMENT

# A decision that took longer than a day is a tab left open, not a lead time.
MAX_LEAD_TIME_MS = 24 * 3600 * 1000

# Who may lock a query, still change a locked one, and clear every judgment of an image: staff allowed to
# change queries.
MANAGE_QUERIES = "annotator.change_query"
LOCKED_MESSAGE = "Query {id} is marked done and locked by staff: ask them to reopen it."
ADJUDICATE = sealed.ADJUDICATE
ADJUDICATE_MESSAGE = 'Adjudicating needs the permission "can adjudicate": ask staff for it.'


# Sent inside a write's transaction, after the final labels of `image_ids` of `query_id` are settled, when the query
# has an open completeness check: annotator.completeness decides a check whose last sampled image this settled (the
# decision lands with the write that makes it, never on a read). A signal, so that this room imports no other.
judgments_settled = Signal()


class LabelRefused(PermissionDenied):
    """A label write the project's rules refuse; the text says why. Views answer 403 with it, and so does
    DRF (it turns Django's PermissionDenied into a 403 that keeps the message)."""


def may_manage(user: Writer) -> bool:
    return user is not None and user.has_perm(MANAGE_QUERIES)


def locked_for(query: Query, user: Writer) -> bool:
    """Whether `user` is held off `query`'s labels by its lock (what the pages show as locked)."""
    return query.locked and not may_manage(user)


def locked_message(query: Query) -> str:
    """The sentence a refused write on a locked query shows."""
    return LOCKED_MESSAGE.format(id=query.pk)


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
    """One label an annotator sets: `value` "" clears it. `lead_time_ms`: how long they looked first;
    `source`: how they gave it, where a batch mixes them (the page's clicks and keys), else the call's."""

    image_id: int
    value: str
    lead_time_ms: int | None = None
    source: str | None = None


@dataclass(frozen=True)
class Saved:
    """What became of one LabelChange: `changed` is False when the writer's judgment already had that value."""

    image_id: int
    value: str
    changed: bool


class NoDisagreement(ValueError):
    """An adjudication of an image whose judgments agree (or that has none): nothing to decide."""


def set_labels(
    *,
    query_id: int,
    changes: Sequence[LabelChange],
    user: Writer = None,
    source: str,
    import_batch: ImportBatch | None = None,
) -> list[Saved]:
    """Set (or, with value "", clear) `user`'s judgments of images of one query, all in one transaction,
    recording each change, then derive those images' final labels again.

    The one write path for labels an annotator sets: the labeling page's saves and the API's, one label or
    5,000, go through here. Changes apply in the order given, so an image listed twice ends with its last
    value and both events; `import_batch` is recorded on each event an import writes. Returns one Saved per
    change, in order. Raises ValueError for a bad value, source or lead time and LabelRefused (nothing
    written) when the query's lock forbids a change. Another annotator's judgment is never touched.
    """
    for change in changes:
        if change.value:
            _check_value(change.value)
        _check_lead_time(change.lead_time_ms)
        if change.source is not None:
            _check_source(change.source)
    _check_source(source)
    by_image: dict[int, list[LabelChange]] = defaultdict(list)
    for change in changes:
        by_image[change.image_id].append(change)
    plans = _write(query_id, by_image, user, source, import_batch)
    changed = {image_id: iter(plan.changed) for image_id, plan in plans.items()}
    return [Saved(change.image_id, change.value, next(changed[change.image_id])) for change in changes]


def label_unlabeled(
    query_id: int, image_ids: Iterable[int], *, value: str, user: Writer = None, source: str
) -> list[int]:
    """Give `value` to those of `image_ids` that `user` sees unlabeled (the annotation tool's Submit: every
    image shown and not labeled becomes not relevant), in one transaction.

    What they see is what annotator.labels.sealed says: their own judgments, and the final labels outside their
    blind sample; those are kept, whoever wrote them. Two Submits of the same images, or a Submit racing a
    click, queue on the images' rows and never label twice. Returns the ids labeled, in the order given.
    """
    _check_value(value)
    _check_source(source)
    image_ids = list(dict.fromkeys(int(image_id) for image_id in image_ids))
    by_image = {image_id: [LabelChange(image_id, value)] for image_id in image_ids}
    plans = _write(query_id, by_image, user, source, None, keep_seen=True)
    return [image_id for image_id in image_ids if image_id in plans and any(plans[image_id].changed)]


def set_label(
    *, query_id: int, image_id: int, value: str, user: Writer = None, source: str, lead_time_ms: int | None = None
) -> tuple[Label, bool]:
    """Set `user`'s judgment of one image (set_labels with one change). Returns (final label, changed)."""
    (saved,) = set_labels(
        query_id=query_id, changes=[LabelChange(image_id, value, lead_time_ms)], user=user, source=source
    )
    return Label.objects.get(query_id=query_id, image_id=image_id), saved.changed


def clear_label(*, query_id: int, image_id: int, user: Writer = None, source: str) -> bool:
    """Remove `user`'s judgment of an image, recording it. Returns whether they had one. Other annotators'
    judgments stay (staff clear an image for everyone with clear_labels)."""
    (saved,) = set_labels(query_id=query_id, changes=[LabelChange(image_id, "")], user=user, source=source)
    return saved.changed


def clear_labels(labels: Iterable[Label], *, user: Writer, source: str) -> int:
    """Remove every judgment (and any adjudication) of these final labels' images, in one transaction: the
    admin's "delete selected", staff only. The images go back to not yet seen; the history keeps each
    judgment removed. Returns how many final labels went."""
    _check_source(source)
    if not may_manage(user):
        raise LabelRefused("Only staff may clear an image's labels for every annotator.")
    by_query: dict[int, list[int]] = defaultdict(list)
    for label in labels:
        by_query[label.query_id].append(label.image_id)
    cleared = 0
    with transaction.atomic(), recording_label_changes():
        for query_id, image_ids in by_query.items():
            held = _hold(query_id, image_ids)
            judgments = list(Judgment.objects.filter(query_id=query_id, image_id__in=image_ids))
            events = [
                _event(query_id, j.image_id, j.value, "", user, source, annotator_id=j.annotator_id) for j in judgments
            ]
            Judgment.objects.filter(query_id=query_id, image_id__in=image_ids).delete()
            removed = Counter(j.annotator_id for j in judgments if j.annotator_id is not None)
            tallies.count_judgments(query_id, Counter({annotator_id: -n for annotator_id, n in removed.items()}))
            recorded = _record(events)
            cleared += sum(1 for label in held.values() if label.value)
            _settle(query_id, held, _rule(query_id), events=recorded)
    return cleared


def adjudicate(*, query_id: int, image_id: int, value: str, user: Writer) -> Label:
    """Decide the final label of an image the annotators disagree on; the decision is recorded (source
    adjudication) and holds whatever the judgments say later. Raises LabelRefused without the permission
    "can adjudicate" (or on a locked query), ValueError for a value outside the label set, NoDisagreement
    where the judgments agree. Nothing changes when it raises."""
    if user is None or not user.has_perm(ADJUDICATE):
        raise LabelRefused(ADJUDICATE_MESSAGE)
    _check_value(value)
    with transaction.atomic(), recording_label_changes():
        check_writable([query_id], user)
        held = _hold(query_id, [image_id])
        values = set(Judgment.objects.filter(query_id=query_id, image_id=image_id).values_list("value", flat=True))
        split = len(values) > 1 or held[image_id].decided_by == Decision.UNDECIDED  # a revised blind vote too
        if not split and not _to_confirm(query_id, image_id, held[image_id]):
            _settle(query_id, held, _rule(query_id))  # drop the placeholder, if one was inserted
            raise NoDisagreement(_why_nothing_to_decide(query_id, image_id, judged=bool(values)))
        label = held[image_id]
        old = label.value
        label.value, label.decided_by, label.annotator, label.updated_at = (
            value, Decision.ADJUDICATED, user, timezone.now(),
        )  # fmt: skip
        Label.objects.bulk_update([label], ["value", "decided_by", "annotator", "updated_at"])
        recorded = _record([_event(query_id, image_id, old, value, user, LabelSource.ADJUDICATION, annotator_id=None)])
        tallies.count_final_labels(query_id, [old], [value], label.updated_at, events=recorded)
        judgments_settled.send(sender=Label, query_id=query_id, image_ids=[image_id])
    return label


def _why_nothing_to_decide(query_id: int, image_id: int, *, judged: bool) -> str:
    """The sentence of a refused decision on an image whose judgments agree: where it waited in a completeness
    check that a write decided since (a row of an adjudicator's queue loaded before), that check's outcome."""
    said = f"Image {image_id} has no disagreement to decide for query {query_id}: "
    if not judged:
        return said + "nobody has judged it."
    decided = decided_check_sampling(query_id, image_id)
    if decided is None:
        return said + "its judgments agree."
    whose = "the benchmark's" if decided.claim == CompletenessCheck.Claim.BENCHMARK else "the query's"
    return said + (
        f"its judgments agree, and {whose} completeness check {decided.ordinal} that sampled it has been decided "
        f"({decided.get_status_display()}), so it needs no confirmation now."
    )


def _to_confirm(query_id: int, image_id: int, label: Label) -> bool:
    """Whether an adjudicator may decide `image_id` although its judgments agree: a positive (relevant or unsure)
    that one judgment alone calls so (a completeness claim counts only confirmed positives), or a sampled image of
    an open completeness check, the query's or the benchmark's, that its looks called a positive (every such image
    is confirmed, so that two agreeing mistakes do not count as one: annotator.completeness.checks)."""
    if label.value not in CHECKED:
        return False
    return label.decided_by == Decision.SINGLE or image_id in sampled_images(query_id, [image_id])


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

    Used by the relevant-label import (annotator/inquire/importers.py): set_labels for each query's pairs, read
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


@dataclass
class _Plan:
    """One image's judgment by the writer, replayed in memory: its final value ("" for none), the events,
    and for each change whether it changed anything."""

    value: str
    events: list[tuple[str, str, int | None, str]]  # (old value, new value, lead time, source)
    changed: list[bool]


def _rule(query_id: int) -> str:
    """The final-label rule of a query."""
    return Query.objects.values_list("final_rule", flat=True).get(pk=query_id)


def _write(
    query_id: int,
    by_image: dict[int, list[LabelChange]],
    user: Writer,
    source: str,
    import_batch: ImportBatch | None,
    *,
    keep_seen: bool = False,
) -> dict[int, _Plan]:
    """Apply the changes to `user`'s judgments and settle the final labels, in one transaction. With
    `keep_seen`, images `user` already sees labeled are left alone (Submit)."""
    with transaction.atomic(), recording_label_changes():
        query = _query_as_written(query_id)
        if query.locked:  # one read of the query on the hot path; the lock's rule stays check_writable's
            check_writable([query_id], user)
        held = _hold(query_id, by_image)
        if keep_seen:
            seen = sealed.seen_by(query, user, by_image)
            by_image = {image_id: todo for image_id, todo in by_image.items() if image_id not in seen}
        mine = Judgment.objects.filter(query_id=query_id, image_id__in=list(by_image))
        own = {j.image_id: j for j in (mine.filter(annotator=user) if user else mine.filter(annotator__isnull=True))}
        plans = {image_id: _replay(own.get(image_id), todo, source) for image_id, todo in by_image.items()}
        recorded = _write_judgments(query_id, own, plans, user, source, import_batch)
        if query.sampled and user is not None:
            _keep_blind_votes(query_id, user, plans)
        _settle(query_id, held, query.final_rule, blind=query.sampled, events=recorded)
        if query.checking:  # read with the query: the everyday save pays no extra round trip
            judgments_settled.send(sender=Label, query_id=query_id, image_ids=list(plans))
    return plans


def _query_as_written(query_id: int) -> Any:  # a Query with two annotations mypy does not see
    """The query with what a write needs of it, in one read: its lock, rule and wanted judgments, whether a check is
    open on it (`checking`) and whether it has an overlap sample (`sampled`)."""
    return (
        Query.objects.only("locked", "final_rule", "judgments_wanted")
        .annotate(
            checking=Exists(_OPEN_PAIRS.filter(query=OuterRef("pk"))),
            sampled=Exists(OverlapImage.objects.filter(query=OuterRef("pk"))),
        )
        .get(pk=query_id)
    )


def _keep_blind_votes(query_id: int, user: User, plans: dict[int, _Plan]) -> None:
    """A judgment given under seal is the judge's blind vote: kept as it was given."""
    under_seal = [image_id for _, image_id, _ in sealed.sealed_to(user, query=query_id, image_ids=plans)]
    sealed.keep_votes(query_id, [(i, user.pk, plans[i].value) for i in under_seal if plans[i].value])


_OPEN_PAIRS = CheckImage.objects.filter(completeness_check__status=CompletenessCheck.Status.CHECKING)


def _replay(judgment: Judgment | None, changes: list[LabelChange], source: str) -> _Plan:
    plan = _Plan(judgment.value if judgment else "", [], [])
    for change in changes:
        if change.value == plan.value:
            plan.changed.append(False)
            continue
        lead_time_ms = _check_lead_time(change.lead_time_ms) if change.value else None
        plan.events.append((plan.value, change.value, lead_time_ms, change.source or source))
        plan.changed.append(True)
        plan.value = change.value
    return plan


def _hold(query_id: int, image_ids: Iterable[int]) -> dict[int, Label]:
    """The final-label rows of these images, locked until the transaction ends; an image without one gets
    a placeholder (value "") that _settle fills or removes. Every writer of an image queues here, so the
    judgments it then reads are the last committed ones.

    Why a loop: under READ COMMITTED, an INSERT ... ON CONFLICT DO NOTHING that meets a committed row does
    not wait for the writer holding it, and the SELECT ... FOR UPDATE that then waits on that writer skips
    the row if the writer deletes it (a clear of the image's last judgment). The image would go unheld, its
    new judgment would get no final label (issue 37: 85 of 200 lost). So the images not yet held are
    inserted and locked again until every one is: a row deleted meanwhile is inserted anew, and each round
    holds at least one more image or waits on a writer that has committed."""
    wanted = sorted(set(image_ids))  # one order for every writer: no deadlock between two of them
    held: dict[int, Label] = {}
    missing = wanted
    for _ in range(HOLD_ROUNDS):
        _insert_placeholders(query_id, missing)
        found = Label.objects.select_for_update().filter(query_id=query_id, image_id__in=missing).order_by("image_id")
        held.update((label.image_id, label) for label in found)
        missing = [image_id for image_id in wanted if image_id not in held]
        if not missing:
            return held
    raise DatabaseError(f"Could not hold the labels of {len(missing)} images of query {query_id}: try again.")


# Rounds of _hold before it gives up: each round that misses an image saw another writer delete its row,
# which at most the images' other writers can do; a hundred in a row is a broken database, not a race.
HOLD_ROUNDS = 100


def _insert_placeholders(query_id: int, image_ids: list[int]) -> None:
    table = connection.ops.quote_name(Label._meta.db_table)
    now = timezone.now()
    per_statement = ROWS_PER_STATEMENT // 4  # four parameters a row, within SQLite's 32,766
    with connection.cursor() as cursor:
        for start in range(0, len(image_ids), per_statement):
            chunk = image_ids[start : start + per_statement]
            placeholders = ", ".join(["(%s, %s, '', '', %s, %s)"] * len(chunk))
            cursor.execute(
                f"INSERT INTO {table} (query_id, image_id, value, decided_by, created_at, updated_at) "
                f"VALUES {placeholders} ON CONFLICT (query_id, image_id) DO NOTHING",
                [item for image_id in chunk for item in (query_id, image_id, now, now)],
            )


def _write_judgments(
    query_id: int,
    own: dict[int, Judgment],
    plans: dict[int, _Plan],
    user: Writer,
    source: str,
    import_batch: ImportBatch | None,
) -> int:
    now = timezone.now()
    created, updated, removed = [], [], []
    for image_id, plan in plans.items():
        if not plan.events:
            continue
        judgment = own.get(image_id)
        _, _, lead_time_ms, given_by = plan.events[-1]  # the judgment keeps its last change's
        if not plan.value:
            if judgment is not None:
                removed.append(judgment.pk)
        elif judgment is None:
            created.append(
                Judgment(
                    query_id=query_id, image_id=image_id, annotator=user, value=plan.value, source=given_by,
                    lead_time_ms=lead_time_ms, created_at=now, updated_at=now,
                )
            )  # fmt: skip
        elif plan.value != judgment.value:
            judgment.value, judgment.source, judgment.lead_time_ms, judgment.updated_at = (
                plan.value, given_by, lead_time_ms, now,
            )  # fmt: skip
            updated.append(judgment)
    Judgment.objects.bulk_create(created, batch_size=ROWS_PER_STATEMENT // 8)
    _update_alike(Judgment, updated, ["value", "source", "lead_time_ms", "updated_at"])
    Judgment.objects.filter(pk__in=removed).delete()
    if user is not None and len(created) != len(removed):  # the system's judgments (imports) are nobody's
        tallies.count_judgments(query_id, Counter({user.pk: len(created) - len(removed)}))
    return _record(
        [
            _event(
                query_id,
                image_id,
                old,
                new,
                user,
                given_by,
                annotator_id=user.pk if user else None,
                lead_time_ms=lead_time_ms,
                import_batch=import_batch,
            )  # fmt: skip
            for image_id, plan in plans.items()
            for old, new, lead_time_ms, given_by in plan.events
        ]
    )


def _record(events: list[LabelEvent]) -> int:
    """Append a write's events to the history; how many (the caller's `_settle` counts them into the query's change
    marker)."""
    LabelEvent.objects.bulk_create(events)
    return len(events)


def _event(
    query_id: int,
    image_id: int,
    old: str,
    new: str,
    user: Writer,
    source: str,
    *,
    annotator_id: int | None,
    lead_time_ms: int | None = None,
    import_batch: ImportBatch | None = None,
) -> LabelEvent:
    """A history row: `user` changed `annotator_id`'s judgment (their own, mostly; None for the system's and
    for an adjudication, whose values are the final label's)."""
    return LabelEvent(
        query_id=query_id, image_id=image_id, old_value=old, new_value=new, user=user, annotator_id=annotator_id,
        source=source, lead_time_ms=lead_time_ms, import_batch=import_batch,
    )  # fmt: skip


def finals_astray(query_id: int) -> list[str]:
    """Where a query's final labels are not what its rule makes of the judgments, one sentence each: a final
    label missing, left over without a judgment, or of another value (an adjudicated label keeps its
    decision while its image has judgments). Empty when every final label holds: what the interleaving tests
    and the load bench check, and what `recount_labels --finals` repairs."""
    rule = _rule(query_id)
    votes: dict[int, list[str]] = defaultdict(list)
    for image_id, value in Judgment.objects.filter(query_id=query_id).values_list("image_id", "value"):
        votes[image_id].append(value)
    finals = {label.image_id: label for label in Label.objects.filter(query_id=query_id)}
    revised = sealed.revised(query_id, votes)
    astray = []
    for image_id in sorted(set(votes) | set(finals)):
        label = finals.get(image_id)
        if label is None:
            astray.append(f"image {image_id}: judgments {votes[image_id]} and no final label")
        elif image_id not in votes:
            astray.append(f"image {image_id}: final label {label.value!r} without a judgment")
        else:
            adjudicated = label.value if label.decided_by == Decision.ADJUDICATED else ""
            want, _ = final.decide(votes[image_id], rule, adjudicated, revised=image_id in revised)
            if label.value != want:
                astray.append(f"image {image_id}: judgments {votes[image_id]}, final {label.value!r}, rule {want!r}")
    return astray


def settle_again(
    query_id: int, *, per_transaction: int = 5_000, progress: Callable[[int, int], None] | None = None
) -> int:
    """Derive every final label of a query again from its judgments, the way each write does, and return
    how many were made, changed or removed: the repair for final labels lost or changed behind the write
    path's back (a restore, a hand edit, a bug). Images are held `per_transaction` at a time, so labeling
    goes on meanwhile; `progress(done, total)` after each batch. Adjudicated labels keep their decision."""
    judged = Judgment.objects.filter(query_id=query_id).values_list("image_id", flat=True)
    image_ids = sorted(set(judged) | set(Label.objects.filter(query_id=query_id).values_list("image_id", flat=True)))
    changed = 0
    for start in range(0, len(image_ids), per_transaction):
        with transaction.atomic(), recording_label_changes():
            held = _hold(query_id, image_ids[start : start + per_transaction])
            changed += _settle(query_id, held, _rule(query_id))
        if progress is not None:
            progress(min(start + per_transaction, len(image_ids)), len(image_ids))
    return changed


def _settle(query_id: int, held: dict[int, Label], rule: str, *, blind: bool = True, events: int = 0) -> int:
    """Derive the held images' final labels from their judgments (annotator.labels.final): update those that
    changed, remove those with no judgment left (placeholders included). Returns how many stored final
    labels were made, changed or removed. `blind` False: the query has no overlap sample, so no blind vote to
    have been revised (the everyday save skips that read). `events`: how many the write recorded, counted into the
    query's change marker by the same statement as its final labels (one UPDATE of the tally a write)."""
    revised = sealed.revised(query_id, held) if blind else set()
    votes: dict[int, list[tuple[int | None, str]]] = defaultdict(list)
    for image_id, annotator_id, value in Judgment.objects.filter(
        query_id=query_id, image_id__in=list(held)
    ).values_list("image_id", "annotator_id", "value"):
        votes[image_id].append((annotator_id, value))
    now = timezone.now()
    updated, removed = [], []
    before, after = [], []  # the values of the labels that changed, for the query's tally
    gone = 0
    for image_id, label in held.items():
        judged = votes.get(image_id, [])
        adjudicated = label.value if label.decided_by == Decision.ADJUDICATED else ""
        value, decided_by = final.decide([value for _, value in judged], rule, adjudicated, revised=image_id in revised)
        if not value:
            removed.append(label.pk)
            if label.value:  # a stored label goes (a placeholder going is no change)
                before.append(label.value)
                gone += 1
            continue
        annotator_id = label.annotator_id if adjudicated else _voter(judged, decided_by)
        if (label.value, label.decided_by, label.annotator_id) != (value, decided_by, annotator_id):
            before.append(label.value)
            after.append(value)
            label.value, label.decided_by, label.annotator_id, label.updated_at = value, decided_by, annotator_id, now
            updated.append(label)
    _update_alike(Label, updated, ["value", "decided_by", "annotator_id", "updated_at"])
    Label.objects.filter(pk__in=removed).delete()
    if before or after:
        tallies.count_final_labels(query_id, before, after, now, events=events)
    else:
        tallies.count_events(query_id, events)
    return len(updated) + gone


def _update_alike(model: type[Judgment] | type[Label], rows: list[Judgment] | list[Label], fields: list[str]) -> None:
    """Write `fields` of `rows` in one statement per few thousand rows: UPDATE ... FROM (VALUES (id, new
    values), ...) joined on the id (PostgreSQL, and SQLite since 3.33). Django's bulk_update builds a CASE
    WHEN per row and field (60 of the 90 ms of a 50-label save went to building it), and an UPDATE per
    set of alike values is one per label once the labeling page sends each label's own lead time."""
    if not rows:
        return
    table, quote = model._meta.db_table, connection.ops.quote_name
    columns, key = [_column(model, name) for name in fields], _column(model, "id")
    # PostgreSQL types a VALUES list's columns from its first row's text: say what each is. SQLite
    # (where a cast to a date type would make it a number) takes them as they come.
    on_postgres = connection.vendor == "postgresql"
    row_sql = (
        "(" + ", ".join(f"%s::{field.db_type(connection)}" if on_postgres else "%s" for field in [key, *columns]) + ")"
    )
    # A VALUES list's columns are column1, column2, ... in both databases (SQLite takes no column aliases).
    assignments = ", ".join(
        f"{quote(str(field.column))} = alike.column{position}" for position, field in enumerate(columns, start=2)
    )
    per_statement = ROWS_PER_STATEMENT // (len(fields) + 1)  # within SQLite's 32,766 parameters
    with connection.cursor() as cursor:
        for start in range(0, len(rows), per_statement):
            chunk = rows[start : start + per_statement]
            values = [
                item
                for row in chunk
                for item in (
                    row.pk,
                    *(field.get_db_prep_save(getattr(row, field.attname), connection) for field in columns),
                )
            ]
            cursor.execute(
                f"UPDATE {quote(table)} SET {assignments} FROM (VALUES {', '.join([row_sql] * len(chunk))}) AS alike "
                f"WHERE {quote(table)}.{quote(str(key.column))} = alike.column1",
                values,
            )


def _column(model: type[Judgment] | type[Label], name: str) -> "models.Field[Any, Any]":
    field = model._meta.get_field(name)
    if not isinstance(field, models.Field):  # a relation's reverse side has no column
        raise TypeError(f"{model.__name__}.{name} is not a column")
    return field


def _voter(judged: list[tuple[int | None, str]], decided_by: str) -> int | None:
    """The annotator a single-vote label is attributed to (the only voter; with only unsure judgments, the
    only judge); None for labels many agree on."""
    if decided_by != Decision.SINGLE:
        return None
    voters = [annotator_id for annotator_id, value in judged if value != LabelValue.UNSURE] or [judged[0][0]]
    return voters[0]


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
