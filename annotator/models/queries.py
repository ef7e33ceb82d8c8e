"""The queries: their text, split and final-label rule, and the example images a query is searched by."""

import hashlib
from collections.abc import Collection
from typing import Any, Self

from django.core.exceptions import ValidationError
from django.db import models

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
