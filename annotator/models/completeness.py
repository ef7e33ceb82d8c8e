"""Completeness checks, per query and of the benchmark, with their frozen frames and samples."""

import zlib

import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.db import models
from django.utils import timezone

from annotator.models.queries import Query
from catalog.models import Image


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
