"""Judgments, final labels and their history (annotator.labels is their only writer), with the per-query tallies
kept beside them."""

from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotator.models.queries import Query
from catalog.models import Image


class LabelValue(models.TextChoices):
    RELEVANT = "relevant", "Relevant"
    NOT_RELEVANT = "not_relevant", "Not relevant"
    UNSURE = "unsure", "Unsure"


# A final label where the votes are split and no adjudicator has decided: not relevant in the export,
# listed among the disagreements. Never a judgment an annotator gives.
UNDECIDED = "undecided"
FINAL_VALUES = [*LabelValue.choices, (UNDECIDED, "Undecided")]


class Decision(models.TextChoices):
    """How a final label came about (annotator.labels.final)."""

    SINGLE = "single", "one vote"
    AGREED = "agreed", "every vote agrees"
    MAJORITY = "majority", "majority of the votes"
    ADJUDICATED = "adjudicated", "adjudicated"
    UNDECIDED = "undecided", "votes split, not adjudicated"


class LabelSource(models.TextChoices):
    CLICK = "click", "click"
    KEYBOARD = "keyboard", "keyboard"
    SUBMIT = "submit", "submit"
    IMPORT = "import", "import"
    API = "api", "api"
    ADMIN = "admin", "admin"
    ADJUDICATION = "adjudication", "adjudication"


# True while annotator.labels writes a label change together with its event.
_recording = ContextVar("quire_recording_label_changes", default=False)


@contextmanager
def recording_label_changes() -> Iterator[None]:
    """Allow Label writes inside this block. Only annotator.labels uses it: it writes the
    LabelEvent of every change in the same transaction."""
    token = _recording.set(True)
    try:
        yield
    finally:
        _recording.reset(token)


def _refuse_unrecorded(action: str) -> None:
    if not _recording.get():
        raise TypeError(
            f"Labels cannot be {action} directly: use annotator.labels (set_labels, set_label, clear_label, "
            "set_labels_in_bulk), which records every change in the label history."
        )


class RecordedQuerySet(models.QuerySet[Any]):
    """Judgments and labels: written only by annotator.labels, which records each change."""

    def update(self, **kwargs: Any) -> int:
        _refuse_unrecorded("updated")
        return super().update(**kwargs)

    def delete(self) -> tuple[int, dict[str, int]]:
        _refuse_unrecorded("deleted")
        return super().delete()

    def bulk_create(self, objs: Iterable[Any], *args: Any, **kwargs: Any) -> list[Any]:
        _refuse_unrecorded("created")
        return super().bulk_create(objs, *args, **kwargs)

    def bulk_update(self, objs: Iterable[Any], *args: Any, **kwargs: Any) -> int:
        _refuse_unrecorded("updated")
        return super().bulk_update(objs, *args, **kwargs)


class _Recorded(models.Model):
    """A row only annotator.labels writes (see RecordedQuerySet)."""

    objects = RecordedQuerySet.as_manager()

    class Meta:
        abstract = True

    def save(self, *args: Any, **kwargs: Any) -> None:
        _refuse_unrecorded("saved")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        _refuse_unrecorded("deleted")
        return super().delete(*args, **kwargs)


class QueryTally(models.Model):
    """A query's final labels, counted: kept in step by annotator.labels in the transaction of every change
    (labels change nowhere else: the model refuses other writes, and PROTECT keeps cascades off them). The
    dashboard and the query list read one row a query instead of counting every label (2.9 s for 250
    queries at 1M labels: bench/RESULTS.md)."""

    query = models.OneToOneField(Query, primary_key=True, on_delete=models.CASCADE, related_name="tally")
    labeled = models.PositiveIntegerField(default=0)
    relevant = models.PositiveIntegerField(default=0)
    not_relevant = models.PositiveIntegerField(default=0)
    unsure = models.PositiveIntegerField(default=0)
    undecided = models.PositiveIntegerField(default=0)
    last_activity = models.DateTimeField(null=True, blank=True)  # the last change of a final label
    # Moves with every write of the query's labels (each event recorded, each change of final labels): the cheap
    # marker the figures computed in the background are cached by (common/cached_figures.py), one row read
    # instead of a COUNT and a MAX over every judgment on each poll.
    changes = models.PositiveBigIntegerField(default=0, db_default=0)

    def __str__(self) -> str:
        return f"query {self.query_id}: {self.labeled} labeled"


class QueryAnnotator(models.Model):
    """How many judgments one annotator holds for one query, kept in step by annotator.labels: the dashboard's
    list of who labeled each query, without a DISTINCT over every judgment (0.35 s at 1M)."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="annotator_tallies")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    judgments = models.PositiveIntegerField(default=0)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["query", "annotator"], name="query_annotator_once")]

    def __str__(self) -> str:
        return f"query {self.query_id} / annotator {self.annotator_id}: {self.judgments}"


class Judgment(_Recorded):
    """One annotator's current label of one image for one query. Every annotator keeps their own: a second
    annotator's label never overwrites the first's. `annotator` None: the system's (an import).

    Change judgments through annotator.labels, which also writes the LabelEvent and the final Label.
    """

    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="judgments")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="judgments")
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="judgments"
    )
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    source = models.CharField(max_length=16, choices=LabelSource.choices)
    lead_time_ms = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(default=timezone.now)
    updated_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["query", "image", "annotator"], name="judgment_one_per_annotator"),
            # NULLs are distinct in a unique index: the system's judgment needs its own.
            models.UniqueConstraint(
                fields=["query", "image"], condition=models.Q(annotator__isnull=True), name="judgment_one_by_system"
            ),
        ]
        indexes = [models.Index(fields=["query", "annotator"], name="judgment_query_annotator")]

    def __str__(self) -> str:
        return f"query {self.query_id} / image {self.image_id} by {self.annotator_id or 'the system'}: {self.value}"


class Label(_Recorded):
    """The final (benchmark) label of one image for one query: derived from its judgments by the query's
    rule, or decided by an adjudicator. No row means no judgment yet.

    Change labels through annotator.labels, which also writes the LabelEvent.
    """

    # PROTECT, not CASCADE: deleting a query or image would remove labels without an event.
    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="labels")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="labels")
    value = models.CharField(max_length=16, choices=FINAL_VALUES)
    decided_by = models.CharField(max_length=12, choices=Decision.choices, default=Decision.SINGLE)
    # The one annotator whose vote it is (single), or the adjudicator; empty for agreed and majority labels.
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        permissions = [
            ("export_labels", "Can download the INQUIRE export files"),
            ("adjudicate_labels", "Can adjudicate: decide the final label where annotators disagree"),
        ]
        constraints = [models.UniqueConstraint(fields=["query", "image"], name="label_one_per_query_image")]
        indexes = [
            # Per-query counts by value (dashboard) without touching the table.
            models.Index(fields=["query", "value"], name="label_query_value"),
            # Last activity per query.
            models.Index(fields=["query", "updated_at"], name="label_query_updated"),
        ]

    def __str__(self) -> str:
        return f"query {self.query_id} / image {self.image_id}: {self.value}"


class ImportBatch(models.Model):
    """One run of a label import: which file, when, by whom. Every event it wrote points here,
    as Label Studio keeps the import an annotation came from."""

    file_name = models.CharField(max_length=1024)
    kind = models.CharField(max_length=64, help_text="What was imported, e.g. inquire_annotations.")
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    created_at = models.DateTimeField(auto_now_add=True)
    rows = models.PositiveIntegerField(default=0)
    labels_changed = models.PositiveIntegerField(default=0)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "import batches"

    def __str__(self) -> str:
        return f"import {self.pk}: {self.kind} from {self.file_name}"


class LabelEventQuerySet(models.QuerySet["LabelEvent"]):
    def update(self, **kwargs: Any) -> int:
        raise TypeError("Label events are append-only; they cannot be updated.")

    def delete(self) -> tuple[int, dict[str, int]]:
        raise TypeError("Label events are append-only; they cannot be deleted.")


class LabelEvent(models.Model):
    """Append-only history: one row per change of a judgment (or adjudication), never updated or deleted.

    Everything it refers to is PROTECTed: a query, image, user or import with a history
    cannot be deleted (Django answers with ProtectedError, and the admin lists the events).
    """

    query = models.ForeignKey(Query, on_delete=models.PROTECT, related_name="label_events")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="label_events")
    old_value = models.CharField(max_length=16, choices=FINAL_VALUES, blank=True)
    new_value = models.CharField(max_length=16, choices=FINAL_VALUES, blank=True)
    user = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT)
    annotator = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.PROTECT,
        related_name="+",
        help_text="Whose judgment changed (usually the user; empty for the system's and for an adjudication, "
        "whose values are the final label's).",
    )
    source = models.CharField(max_length=16, choices=LabelSource.choices)
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)
    lead_time_ms = models.PositiveIntegerField(
        null=True, blank=True, help_text="How long the annotator looked at the image before deciding (from the page)."
    )
    import_batch = models.ForeignKey(
        ImportBatch, null=True, blank=True, on_delete=models.PROTECT, related_name="events"
    )

    objects = LabelEventQuerySet.as_manager()

    class Meta:
        ordering = ["id"]
        indexes = [models.Index(fields=["query", "image"], name="labelevent_query_image")]

    def __str__(self) -> str:
        return f"{self.old_value or '-'} -> {self.new_value or '-'} ({self.source})"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self.pk is not None:
            raise TypeError("Label events are append-only; they cannot be changed once written.")
        super().save(*args, **kwargs)

    def delete(self, *args: Any, **kwargs: Any) -> tuple[int, dict[str, int]]:
        raise TypeError("Label events are append-only; they cannot be deleted.")
