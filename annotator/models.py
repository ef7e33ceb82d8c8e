"""The queries, and the labels annotators give them, with a history nothing can erase.

Sizes to design for: INQUIRE has 250 queries and ~150k labels over 5M images, and a
labeling project may reach millions of labels.

A team labels: each annotator's label of an image is their Judgment; the Label is the benchmark's
final label, derived from the judgments (annotator.labels.final) or decided by an adjudicator. Exports and
evaluation read Label; agreement reads Judgment.

Provenance rules, enforced here rather than trusted to callers:
- a Judgment or Label changes only inside annotator.labels (`recording_label_changes`), which writes
  the LabelEvent in the same transaction; any other save, update or delete of either raises;
- a LabelEvent is never updated or deleted, and what it refers to (query, image, user,
  import) cannot be deleted while it exists (PROTECT): the history always explains the
  labels.
"""

import hashlib
import zlib
from collections.abc import Collection, Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Self

import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from django.utils import timezone

from catalog.models import Image


class FinalRule(models.TextChoices):
    """How a query's judgments make its final label (an adjudicator's decision always wins)."""

    MAJORITY = "majority", "majority of the votes (a tie is undecided)"
    UNANIMOUS = "unanimous", "every vote agrees (else undecided)"


class Query(models.Model):
    """A natural-language retrieval query. The primary key is INQUIRE's query_id."""

    class Split(models.TextChoices):
        VAL = "val", "val"
        TEST = "test", "test"
        OTHER = "other", "other"

    class Status(models.TextChoices):
        OPEN = "open", "open"
        IN_PROGRESS = "in_progress", "in progress"
        DONE = "done", "done"

    class FullyLabeled(models.TextChoices):
        YES = "yes", "yes"
        NO = "no", "no"
        UNKNOWN = "unknown", "unknown"

    text = models.TextField()
    supercategory = models.CharField(max_length=100, blank=True)
    category = models.CharField(max_length=255, blank=True)
    iconic_group = models.CharField(max_length=100, blank=True)
    split = models.CharField(max_length=10, choices=Split.choices, default=Split.OTHER)
    status = models.CharField(max_length=20, choices=Status.choices, default=Status.OPEN)
    fully_labeled = models.CharField(max_length=10, choices=FullyLabeled.choices, default=FullyLabeled.UNKNOWN)
    notes = models.TextField(blank=True)
    locked = models.BooleanField(
        default=False, help_text="Marked done by staff: only staff may change its labels or tracking fields."
    )
    guidelines = models.TextField(
        blank=True, help_text="What counts as relevant, shown to annotators beside the grid (with the examples)."
    )
    context = models.TextField(
        blank=True, help_text="Structured rerank: visual facts about the query (written by the text model when empty)."
    )
    subquestions = models.JSONField(
        default=list,
        blank=True,
        help_text='Structured rerank: 2 or 3 yes/no questions, e.g. ["Is the bird a Black Skimmer?", ...] '
        "(written by the text model when empty; edit them before a run).",
    )
    # The unnamed first column of the released INQUIRE CSVs (a pandas index),
    # kept so that an export reproduces the released files row for row.
    csv_index = models.IntegerField(null=True, blank=True, editable=False)
    final_rule = models.CharField(
        max_length=10,
        choices=FinalRule.choices,
        default=FinalRule.MAJORITY,
        help_text="How annotators' judgments make the final label where no adjudicator decided.",
    )
    overlap_fraction = models.FloatField(
        null=True,
        blank=True,
        help_text="Blind double labeling: this share (0 to 1) of the images labeled so far gets more judgments.",
    )
    overlap_top = models.PositiveIntegerField(
        null=True, blank=True, help_text="Blind double labeling: every image down to this rank of the text ranking."
    )
    judgments_wanted = models.PositiveSmallIntegerField(
        default=2, help_text="How many annotators judge each image of the overlap sample (2 or 3)."
    )
    # text_key(text), unique: a second query with the same text (a double click on "Add", two admins at
    # once) is refused by the database, not only by the form. A hash, so that a long text fits an index.
    # Null on the later ones of duplicates made before the constraint (migration 0016 keeps them).
    text_key = models.CharField(max_length=64, null=True, unique=True, editable=False)  # noqa: DJ001 (NULLs may repeat)
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    _text_loaded: str | None = None  # the text as read from the database (from_db)

    class Meta:
        verbose_name_plural = "queries"
        ordering = ["id"]

    def __str__(self) -> str:
        return f"{self.id}: {self.text}"

    def save(self, *args: Any, **kwargs: Any) -> None:
        if self._state.adding or self.text != self._text_loaded:
            self.text_key = text_key(self.text)
            if kwargs.get("update_fields") is not None:
                kwargs["update_fields"] = {*kwargs["update_fields"], "text_key"}
        super().save(*args, **kwargs)
        self._text_loaded = self.text

    def clean(self) -> None:
        """The same text as another query's: refused with the other's id (forms and the admin call this)."""
        other = Query.objects.filter(text_key=text_key(self.text)).exclude(pk=self.pk).first()
        if other is not None:
            raise ValidationError({"text": duplicate_text_message(other)})

    @classmethod
    def from_db(cls, db: str | None, field_names: Collection[str], values: Collection[Any], **kwargs: Any) -> Self:
        query = super().from_db(db, field_names, values, **kwargs)  # kwargs: what newer Django versions pass
        query._text_loaded = query.__dict__.get("text")  # to key the text again only when it changes
        return query


def duplicate_text_message(other: "Query") -> str:
    return f"Query {other.pk} already has this text: “{other.text}”. Label that one."


MAX_QUERY_TEXT = 1000  # characters: the longest INQUIRE query is under 200


def normalised_text(text: str) -> str:
    """What makes two query texts the same query: surrounding spaces, runs of spaces and case do not count."""
    return " ".join(text.split()).casefold()


def text_key(text: str) -> str:
    """normalised_text's SHA-256 (hex): two texts that are the same query have the same key."""
    return hashlib.sha256(normalised_text(text).encode()).hexdigest()


class QueryExample(models.Model):
    """An example image of a query: an image of the collection, or one uploaded (kept as a file and as
    its vector under the model it was embedded with). Relevant examples start image and fused rankings;
    staff show both kinds in the guidelines."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="examples")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+", null=True, blank=True)
    upload = models.FileField(upload_to="examples/%Y/%m/", blank=True, help_text="An uploaded example image.")
    vector = models.BinaryField(null=True, editable=False, help_text="The upload's vector (float32).")
    vector_model = models.CharField(max_length=200, blank=True, editable=False, help_text="The model of `vector`.")
    embedding_error = models.CharField(
        max_length=500, blank=True, editable=False, help_text="Why the upload could not be embedded, if it could not."
    )
    relevant = models.BooleanField(help_text="An example of a relevant image (else of a not relevant one).")
    note = models.CharField(max_length=500, blank=True, help_text="Why, in a few words.")

    class Meta:
        ordering = ["-relevant", "id"]
        constraints = [
            models.UniqueConstraint(fields=["query", "image"], name="query_example_once"),
            models.CheckConstraint(
                condition=models.Q(image__isnull=False) | ~models.Q(upload=""), name="query_example_has_an_image"
            ),
        ]

    def __str__(self) -> str:
        what = f"image {self.image_id}" if self.image_id else "upload"
        return f"{'relevant' if self.relevant else 'not relevant'} example ({what}) of query {self.query_id}"

    @property
    def embedding(self) -> bool:
        """An upload whose vector a background job is still computing (annotator.labeling.examples)."""
        return bool(self.upload) and self.vector is None and not self.embedding_error


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


class RerankScore(models.Model):
    """A model's score for an image of a query's candidates (a rerank of the CLIP top N): kept for
    reuse, for the labeling page and for evaluation runs."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="rerank_scores")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    method = models.CharField(max_length=20, help_text="yesno (INQUIRE's two-stage rerank), ...")
    model = models.CharField(max_length=200, help_text="The model that scored it.")
    score = models.FloatField()
    clip_rank = models.PositiveIntegerField(help_text="Its rank in the first stage (ties are broken by it).")
    detail = models.JSONField(default=list, blank=True, help_text="Structured: [[sub-question, P(yes)], ...].")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["query", "image", "method", "model"], name="rerank_score_once")]
        indexes = [models.Index(fields=["query", "method", "model"])]

    def __str__(self) -> str:
        return f"{self.method}/{self.model} {self.score:.3f} for image {self.image_id} of query {self.query_id}"


class RerankJob(models.Model):
    """A rerank of a query's CLIP top N by a vision-language model, run by a Celery worker on the `models`
    queue; its progress is what the labeling page shows."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="rerank_jobs")
    method = models.CharField(max_length=20, default="yesno")
    model = models.CharField(max_length=200)
    top = models.PositiveIntegerField(default=100)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveIntegerField(default=0)
    total = models.PositiveIntegerField(default=0)
    asked = models.PositiveIntegerField(default=0, help_text="Requests sent (the rest came from the cache).")
    prompt_tokens = models.PositiveBigIntegerField(default=0, help_text="As the model server billed them.")
    completion_tokens = models.PositiveBigIntegerField(default=0)
    error = models.TextField(blank=True)
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Stamped while a worker runs the job; a stale one means the worker died."
    )

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"rerank of query {self.query_id} ({self.method}, {self.model}): {self.status}"


class GeneratedImage(models.Model):
    """An image VisRet drew for a query (kept so the annotator sees what the ranking searched with)."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="generated_images")
    job = models.ForeignKey("RerankJob", on_delete=models.CASCADE, related_name="generated_images")
    file = models.FileField(upload_to="generated/%Y/%m/")
    description = models.TextField(help_text="The rewritten query the image was drawn from.")
    vector = models.BinaryField(help_text="Its CLIP vector (float32).")
    vector_model = models.CharField(max_length=200)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["id"]

    def __str__(self) -> str:
        return f"VisRet image {self.pk} of query {self.query_id}"


class PreLabel(models.Model):
    """A judge panel's proposal for an image of a query (RMIR): shown on the labeling page for an
    annotator to confirm with one key. Never ground truth by itself: exports and metrics read Label."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="prelabels")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    job = models.ForeignKey("RerankJob", on_delete=models.CASCADE, related_name="prelabels")
    value = models.CharField(max_length=10, help_text="accept, reject, or abstain (no majority).")
    confidence = models.FloatField(help_text="The majority vote's share of the panel.")
    votes = models.JSONField(default=list, help_text="[[judge, P(yes), vote], ...]")
    clip_rank = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "image"], name="prelabel_once_per_job")]

    def __str__(self) -> str:
        return f"{self.value} ({self.confidence:.0%}) for image {self.image_id} of query {self.query_id}"


class Assignment(models.Model):
    """Who works on what: an annotator assigned to a query, to label it or to give the overlap sample's
    blind second judgments. Shown on the dashboard; it informs, it does not lock anyone out."""

    class Role(models.TextChoices):
        LABELS = "labels", "labels the query"
        OVERLAP = "overlap", "second judgments of the overlap sample"

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="assignments")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="assignments")
    role = models.CharField(max_length=10, choices=Role.choices, default=Role.LABELS)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["query", "role", "annotator"]
        constraints = [models.UniqueConstraint(fields=["query", "annotator"], name="assignment_once")]

    def __str__(self) -> str:
        return f"{self.annotator} {self.get_role_display()} {self.query_id}"


class OverlapImage(models.Model):
    """An image of a query's blind overlap sample, or of a check's looks (annotator.labels.sealed): sealed to
    every judge, their own judgment aside, until an adjudicator decides it or staff open the sample."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="overlap")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    added_at = models.DateTimeField(default=timezone.now)
    opened_at = models.DateTimeField(
        null=True, blank=True, help_text="When staff opened the sample (annotator.team.overlap.open_sample)."
    )

    class Meta:
        constraints = [models.UniqueConstraint(fields=["query", "image"], name="overlap_image_once")]

    def __str__(self) -> str:
        return f"image {self.image_id} in the overlap sample of query {self.query_id}"


class BlindVote(models.Model):
    """A judge's first judgment of an image while it was sealed to them: the vote agreement, kappa, Dawid-Skene
    and a check's looks count. It is never changed nor removed with the judgment: a later change is a revision,
    and an image whose judge revised their blind vote goes to the adjudicator (annotator.labels.final)."""

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    annotator = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    value = models.CharField(max_length=16, choices=LabelValue.choices)
    given_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [models.UniqueConstraint(fields=["query", "image", "annotator"], name="blind_vote_once")]

    def __str__(self) -> str:
        return f"query {self.query_id} / image {self.image_id}: {self.annotator_id} voted {self.value} blind"


class FreshLooks(models.Model):
    """What a check's test assumed of its looks (issue 62), the same for a query's check and the benchmark's."""

    looks = models.PositiveSmallIntegerField(
        default=0,
        help_text="Fresh looks (judgments given after the draw) each sampled image gets; 0: a check drawn before "
        "issue 62, whose images wanted two judgments in all.",
    )
    per_look_miss_rate = models.FloatField(
        null=True, blank=True, help_text="The per-look bound the test used (annotator.completeness.looks)."
    )

    class Meta:
        abstract = True


class CompletenessCheck(FreshLooks):
    """A random check of a query's completeness (annotator.completeness.checks): a simple random sample of the images
    of a frame that were not its positives when it was drawn, judged (again, blind) like any other image, and the
    claim it supports (annotator.completeness.certify). The frame, its positives at the draw and the sample are frozen
    here, so the claim speaks of the images it was drawn from whatever the index or the labels do later."""

    class Frame(models.TextChoices):
        COLLECTION = "collection", "the whole collection"
        TAXA = "taxa", "the images of some taxa"
        TOP = "top", "the top of the text and learned rankings"
        REVIEWED = "reviewed", "the images judged and the top of the text and learned rankings"

    class Status(models.TextChoices):
        CHECKING = "checking", "checking"
        CERTIFIED = "certified", "certified"
        NOT_CERTIFIED = "not_certified", "not certified"

    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="completeness_checks")
    ordinal = models.PositiveSmallIntegerField(help_text="The query's 1st, 2nd... check (each spends half the error).")
    frame_kind = models.CharField(max_length=12, choices=Frame.choices)
    frame_depth = models.PositiveIntegerField(null=True, blank=True, help_text="`top` frames: ranks per ranking.")
    frame_taxa = models.JSONField(default=list, blank=True, help_text="`taxa` frames: the taxa as given.")
    frame_size = models.PositiveIntegerField()
    frame_ids = models.BinaryField(help_text="The frame's image ids, packed (annotator.completeness.frames).")
    found_ids = models.BinaryField(help_text="The frame's positives at the draw (final label relevant), packed.")
    sampled_from = models.PositiveIntegerField(
        help_text="The frame's images the sample was drawn from: all but its positives (with second judgments off, "
        "only those nobody had judged)."
    )
    found_at_draw = models.PositiveIntegerField(help_text="The frame's positives labeled at the draw.")
    target_recall = models.FloatField()
    confidence = models.FloatField(help_text="The claim's, over all of the query's checks.")
    tested_at = models.FloatField(help_text="This check's own confidence (annotator.completeness.certify.tested_at).")
    miss_rate = models.FloatField(
        default=0.0, help_text="The bound the test assumes on the share of sampled positives its looks lose."
    )
    second_judgments = models.BooleanField(
        default=True, help_text="Positives (the frame's and the sample's) get a second blind judgment first."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CHECKING)
    # Filled when the check is decided: every sampled image labeled, every second judgment given.
    found = models.PositiveIntegerField(null=True, blank=True, help_text="The frame's positives outside the sample.")
    positives = models.PositiveIntegerField(null=True, blank=True, help_text="Positives met in the sample.")
    recall_lower_bound = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    missing_point = models.FloatField(null=True, blank=True)
    missing_low = models.PositiveIntegerField(null=True, blank=True)
    missing_high = models.PositiveIntegerField(null=True, blank=True)
    drawn_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["query", "-ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["query", "ordinal"], name="completeness_check_ordinal_once"),
            # One open check a query: two admins drawing at once get the same one (checks.draw).
            models.UniqueConstraint(
                fields=["query"], condition=models.Q(status="checking"), name="completeness_check_one_open"
            ),
        ]

    def __str__(self) -> str:
        return f"check {self.ordinal} of query {self.query_id}: {self.status}"


def pack_ids(ids: "npt.NDArray[np.int64]") -> bytes:
    """Sorted unique ids, stored small: their first differences, zlib-compressed (frames and their positives)."""
    return zlib.compress(np.diff(np.asarray(ids, dtype=np.int64), prepend=0).astype("<i8").tobytes(), 6)


def unpack_ids(blob: bytes | memoryview) -> "npt.NDArray[np.int64]":
    deltas = np.frombuffer(zlib.decompress(bytes(blob)), dtype="<i8")
    return np.cumsum(deltas).astype(np.int64)


class QueryFrame(models.Model):
    """The frame a query's completeness claims speak of, frozen once (annotator.completeness.frames): its first check
    freezes the default chosen for the query, and every later check is drawn over the same images, so that
    re-checks speak of one set; staff may declare another (a new row replaces this one, and the claim says so)."""

    query = models.OneToOneField(Query, on_delete=models.CASCADE, related_name="frame")
    kind = models.CharField(max_length=12, choices=CompletenessCheck.Frame.choices)
    depth = models.PositiveIntegerField(null=True, blank=True, help_text="`top` frames: ranks per ranking.")
    taxa = models.JSONField(default=list, blank=True, help_text="`taxa` frames: the taxa as given.")
    size = models.PositiveIntegerField()
    ids = models.BinaryField(help_text="The frame's image ids, packed (annotator.completeness.frames).")
    chosen = models.BooleanField(
        default=True, help_text="Chosen by Quire for the query (the default), not declared by staff."
    )
    declared_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    frozen_at = models.DateTimeField(default=timezone.now)

    def __str__(self) -> str:
        return f"frame of query {self.query_id}: {self.kind} ({self.size} images)"


class CheckImage(models.Model):
    """An image of a completeness check's random sample, in the order it was drawn (the order it is shown)."""

    completeness_check = models.ForeignKey(CompletenessCheck, on_delete=models.CASCADE, related_name="images")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["completeness_check", "position"]
        constraints = [models.UniqueConstraint(fields=["completeness_check", "image"], name="check_image_once")]

    def __str__(self) -> str:
        return f"image {self.image_id} of {self.completeness_check}"


class BenchmarkCheck(FreshLooks):
    """One random check over the union of several queries' frames (annotator.completeness.benchmark): a simple random
    sample of the (query, image) pairs that were not confirmed positives at the draw, each given a fresh blind look,
    and the claim it supports: micro-recall (every positive found in the frames over every positive in them) at
    least a target, with a confidence."""

    class Status(models.TextChoices):
        CHECKING = "checking", "checking"
        CERTIFIED = "certified", "certified"
        NOT_CERTIFIED = "not_certified", "not certified"

    ordinal = models.PositiveIntegerField(help_text="The 1st, 2nd... benchmark check (each spends its share).")
    scope = models.CharField(max_length=200, help_text="Which queries: all, a split, or a list, in words.")
    target_recall = models.FloatField()
    confidence = models.FloatField(help_text="The claim's, over every benchmark check.")
    tested_at = models.FloatField(help_text="This check's own confidence (annotator.completeness.certify.tested_at).")
    miss_rate = models.FloatField(help_text="The bound the test assumes on the share of sampled positives lost.")
    sampled_from = models.PositiveIntegerField(help_text="The pairs the sample was drawn from.")
    found_at_draw = models.PositiveIntegerField(help_text="Confirmed positives in the frames at the draw.")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CHECKING)
    found = models.PositiveIntegerField(null=True, blank=True)
    positives = models.PositiveIntegerField(null=True, blank=True, help_text="Positives met in the sample.")
    recall_lower_bound = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    drawn_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-ordinal"]
        constraints = [
            models.UniqueConstraint(fields=["ordinal"], name="benchmark_check_ordinal_once"),
            models.UniqueConstraint(
                fields=["status"], condition=models.Q(status="checking"), name="benchmark_check_one_open"
            ),
        ]

    def __str__(self) -> str:
        return f"benchmark check {self.ordinal}: {self.status}"


class BenchmarkQuery(models.Model):
    """One query's stratum of a benchmark check: its frame as frozen at the draw and its confirmed positives."""

    benchmark = models.ForeignKey(BenchmarkCheck, on_delete=models.CASCADE, related_name="strata")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    frame_kind = models.CharField(max_length=12, choices=CompletenessCheck.Frame.choices)
    frame_depth = models.PositiveIntegerField(null=True, blank=True)
    frame_size = models.PositiveIntegerField()
    frame_ids = models.BinaryField()
    found_ids = models.BinaryField()
    sampled_from = models.PositiveIntegerField()

    class Meta:
        ordering = ["benchmark", "query"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "query"], name="benchmark_query_once")]

    def __str__(self) -> str:
        return f"query {self.query_id} of {self.benchmark}"


class BenchmarkImage(models.Model):
    """A (query, image) pair of a benchmark check's random sample, in the order drawn."""

    benchmark = models.ForeignKey(BenchmarkCheck, on_delete=models.CASCADE, related_name="images")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["benchmark", "position"]
        constraints = [models.UniqueConstraint(fields=["benchmark", "query", "image"], name="benchmark_image_once")]
        indexes = [models.Index(fields=["query", "image"], name="benchmark_image_pair")]

    def __str__(self) -> str:
        return f"image {self.image_id} of query {self.query_id} in {self.benchmark}"


class Release(models.Model):
    """A published benchmark: a folder of files frozen at its creation (annotator.releases.publish), never changed
    afterwards, and this record of who made it, when, and the hash of its SHA256SUMS (which covers every file)."""

    name = models.CharField(max_length=100, unique=True, help_text="Letters, digits, '.', '_' and '-' only.")
    folder = models.CharField(max_length=1024, help_text="Where its files are, under QUIRE_DATA_DIR/releases.")
    content_hash = models.CharField(max_length=64, help_text="The SHA-256 of its SHA256SUMS file.")
    query_ids = models.JSONField(default=list, help_text="The queries it holds.")
    figures = models.JSONField(default=dict, help_text="Rows per file, and the release's counts.")
    notes = models.TextField(blank=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"release {self.name}"


class ReleaseJob(models.Model):
    """A release being made in the background (annotator.releases.publish.run_job): the page shows its step; a
    finished job points at its release, a failed one says why (and left nothing behind)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "queued"
        RUNNING = "running", "running"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    name = models.CharField(max_length=100)
    query_ids = models.JSONField(default=list, blank=True)
    splits = models.JSONField(default=list, blank=True)
    notes = models.TextField(blank=True)
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    done = models.PositiveSmallIntegerField(default=0)
    total = models.PositiveSmallIntegerField(default=0)
    error = models.TextField(blank=True)
    release = models.ForeignKey(Release, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    started_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        constraints = [
            # One release of a name in the making at a time, whatever the path (two pages, a page and a command):
            # the second is refused up front instead of doing all the work and failing at the rename.
            models.UniqueConstraint(
                fields=["name"], condition=models.Q(status__in=["queued", "running"]), name="one_release_job_per_name"
            )
        ]

    def __str__(self) -> str:
        return f"release job {self.pk} ({self.name}): {self.status}"
