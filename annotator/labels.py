"""Changing labels. Every write goes through here so that each change leaves a LabelEvent.

Views, the API, commands and importers all call these functions; none of them
writes Label rows directly.
"""
from collections.abc import Iterable

from django.db import transaction
from django.utils import timezone

from .models import Label, LabelEvent, LabelSource, LabelValue


def set_label(*, query_id: int, image_id: int, value: str, user=None, source: str) -> tuple[Label, bool]:
    """Set the label of one image for one query, recording the change.

    Returns (label, changed). Setting the value a label already has changes
    nothing and writes no event. Concurrent writers: the later write wins and
    both changes stay in the history (the row is locked while it is changed).
    """
    _check(value, source)
    with transaction.atomic():
        label, created = Label.objects.select_for_update().get_or_create(
            query_id=query_id, image_id=image_id, defaults={"value": value, "annotator": user}
        )
        old_value = "" if created else label.value
        if not created and old_value == value:
            return label, False
        if not created:
            label.value = value
            label.annotator = user
            label.save(update_fields=["value", "annotator", "updated_at"])
        LabelEvent.objects.create(
            query_id=query_id, image_id=image_id, old_value=old_value, new_value=value, user=user, source=source
        )
    return label, True


def _check(value: str, source: str) -> None:
    if value not in LabelValue.values:
        raise ValueError(f"{value!r} is not a label; use one of {', '.join(LabelValue.values)}.")
    if source not in LabelSource.values:
        raise ValueError(f"{source!r} is not a label source; use one of {', '.join(LabelSource.values)}.")


def clear_label(*, query_id: int, image_id: int, user=None, source: str) -> bool:
    """Remove a label (the image goes back to "not yet seen"). Returns whether one existed."""
    with transaction.atomic():
        label = Label.objects.select_for_update().filter(query_id=query_id, image_id=image_id).first()
        if label is None:
            return False
        LabelEvent.objects.create(
            query_id=query_id, image_id=image_id, old_value=label.value, new_value="", user=user, source=source
        )
        label.delete()
    return True


def set_labels_in_bulk(
    pairs: Iterable[tuple[int, int]], *, value: str, user=None, source: str, batch_size: int = 5000
) -> int:
    """Give many (query_id, image_id) pairs the same label; returns how many labels changed.

    Used by imports and by "Submit". All pairs land or none do. Pairs that
    already carry `value` are left alone, so running the same import twice
    changes nothing.
    """
    _check(value, source)
    changed = 0
    batch: list[tuple[int, int]] = []
    with transaction.atomic():
        for pair in pairs:
            batch.append(pair)
            if len(batch) >= batch_size:
                changed += _set_batch(batch, value, user, source)
                batch = []
        if batch:
            changed += _set_batch(batch, value, user, source)
    return changed


def _set_batch(pairs: list[tuple[int, int]], value: str, user, source: str) -> int:
    pairs = list(dict.fromkeys(pairs))  # a pair listed twice is one label
    query_ids = {q for q, _ in pairs}
    image_ids = {i for _, i in pairs}
    existing = {
        (label.query_id, label.image_id): label
        for label in Label.objects.select_for_update().filter(query_id__in=query_ids, image_id__in=image_ids)
    }
    to_create, to_update, events = [], [], []
    for query_id, image_id in pairs:
        label = existing.get((query_id, image_id))
        if label is None:
            to_create.append(Label(query_id=query_id, image_id=image_id, value=value, annotator=user))
            old_value = ""
        elif label.value == value:
            continue
        else:
            old_value = label.value
            label.value = value
            label.annotator = user
            to_update.append(label)
        events.append(
            LabelEvent(
                query_id=query_id, image_id=image_id, old_value=old_value, new_value=value, user=user, source=source
            )
        )
    Label.objects.bulk_create(to_create)
    if to_update:
        # bulk_update skips auto_now; updated_at must move with the value.
        now = timezone.now()
        for label in to_update:
            label.updated_at = now
        Label.objects.bulk_update(to_update, ["value", "annotator", "updated_at"])
    LabelEvent.objects.bulk_create(events)
    return len(events)


def label_unlabeled(query_id: int, image_ids: Iterable[int], *, value: str, user=None, source: str) -> int:
    """Give `value` to those of `image_ids` that have no label for the query yet, in one transaction
    (the annotation tool's Submit: every image shown and not labeled becomes not relevant).
    Labels already there are kept. Returns how many labels were written."""
    image_ids = list(dict.fromkeys(int(image_id) for image_id in image_ids))
    with transaction.atomic():
        labeled = set(Label.objects.filter(query_id=query_id, image_id__in=image_ids).values_list("image_id", flat=True))
        return set_labels_in_bulk(
            [(query_id, image_id) for image_id in image_ids if image_id not in labeled], value=value, user=user, source=source
        )
