"""The team: who labels or adjudicates a query, the blind overlap sample, and the votes given blind."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotator.models.labels import LabelValue
from annotator.models.queries import Query
from catalog.models import Image


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
