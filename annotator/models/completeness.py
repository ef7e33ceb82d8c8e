"""Completeness checks, per query and of the benchmark, with their frozen frames and samples."""

import zlib

import numpy as np
import numpy.typing as npt
from django.conf import settings
from django.db import models
from django.utils import timezone

from annotator.models.queries import Query
from catalog.models import Image


class CompletenessCheck(models.Model):
    """A random check of completeness, of one query's frame or of the union of many queries' frames (the benchmark):
    a simple random sample of the (query, image) pairs of its strata that were not confirmed positives when it was
    drawn, each judged again, blind, like any other image, and the claim it supports (annotator.completeness.certify):
    a query's recall, or the benchmark's micro-recall, at least a target with a confidence. A query's check is a
    benchmark check of one query: one stratum, one sample, one decision (annotator.completeness.checks). The frames,
    their positives at the draw and the sample are frozen in its strata and images, so the claim speaks of the images
    it was drawn from whatever the index or the labels do later."""

    class Claim(models.TextChoices):
        QUERY = "query", "one query's recall"
        BENCHMARK = "benchmark", "the benchmark's micro-recall over its queries' frames"

    class Frame(models.TextChoices):
        COLLECTION = "collection", "the whole collection"
        TAXA = "taxa", "the images of some taxa"
        TOP = "top", "the top of the text and learned rankings"
        REVIEWED = "reviewed", "the images judged and the top of the text and learned rankings"

    class Status(models.TextChoices):
        CHECKING = "checking", "checking"
        CERTIFIED = "certified", "certified"
        NOT_CERTIFIED = "not_certified", "not certified"

    claim = models.CharField(max_length=12, choices=Claim.choices, help_text="Which claim the check tests.")
    query = models.ForeignKey(
        Query,
        null=True,
        blank=True,
        on_delete=models.CASCADE,
        related_name="completeness_checks",
        help_text="A query's check: its query (a benchmark check names its queries in its strata).",
    )
    ordinal = models.PositiveIntegerField(
        help_text="The query's (or the benchmark's) 1st, 2nd... check (each spends its share of the error)."
    )
    scope = models.CharField(max_length=200, help_text="Which queries: one, all, a split, or a list, in words.")
    target_recall = models.FloatField()
    confidence = models.FloatField(help_text="The claim's, over all of the query's (or the benchmark's) checks.")
    tested_at = models.FloatField(help_text="This check's own confidence (annotator.completeness.certify.tested_at).")
    miss_rate = models.FloatField(
        default=0.0, help_text="The bound the test assumes on the share of sampled positives its looks lose."
    )
    sampled_from = models.PositiveIntegerField(
        help_text="The pairs the sample was drawn from: all but the frames' confirmed positives (with second "
        "judgments off, only those nobody had judged)."
    )
    found_at_draw = models.PositiveIntegerField(help_text="Confirmed positives in the frames at the draw.")
    second_judgments = models.BooleanField(
        default=True, help_text="Positives (the frames' and the sample's) get a second blind judgment first."
    )
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.CHECKING)
    # Filled when the check is decided: every sampled pair looked at and every adjudication given, or earlier once
    # the sample has counted more positives than a certificate allows (looked_at).
    found = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The frames' confirmed positives at the draw still relevant at the decision (a benchmark check "
        "decided before annotator 0026: with those confirmed since the draw).",
    )
    found_since = models.PositiveIntegerField(
        null=True, blank=True, help_text="The frames' positives confirmed since the draw, outside the sample."
    )
    positives = models.PositiveIntegerField(null=True, blank=True, help_text="Positives met in the sample.")
    looked_at = models.PositiveIntegerField(
        null=True,
        blank=True,
        help_text="The sampled pairs decided when the check was: fewer than the sample when it had already counted "
        "more positives than a certificate allows (decided early; null: a check decided before annotator 0027, "
        "every pair).",
    )
    first_stage = models.PositiveIntegerField(
        default=0,
        help_text="A query's check in two stages: its first this many sampled pairs certify if they count no positive "
        "(annotator.completeness.certify.staged_sizes); 0: one stage, the whole sample decides.",
    )
    recall_lower_bound = models.FloatField(null=True, blank=True)
    p_value = models.FloatField(null=True, blank=True)
    missing_point = models.FloatField(null=True, blank=True)
    missing_low = models.PositiveIntegerField(null=True, blank=True)
    missing_high = models.PositiveIntegerField(null=True, blank=True)
    # What the test assumed of its looks (issue 62).
    looks = models.PositiveSmallIntegerField(
        default=0,
        help_text="Fresh looks (judgments given after the draw) each sampled image gets; 0: a check drawn before "
        "issue 62, whose images wanted two judgments in all.",
    )
    per_look_miss_rate = models.FloatField(
        null=True, blank=True, help_text="The per-look bound the test used (annotator.completeness.looks)."
    )
    drawn_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL, related_name="+")
    created_at = models.DateTimeField(default=timezone.now)
    decided_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["claim", "query", "-ordinal"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(claim="query", query__isnull=False)
                | models.Q(claim="benchmark", query__isnull=True),
                name="check_names_its_query_alone",
            ),
            models.UniqueConstraint(
                fields=["query", "ordinal"], condition=models.Q(claim="query"), name="check_ordinal_once_a_query"
            ),
            models.UniqueConstraint(
                fields=["ordinal"], condition=models.Q(claim="benchmark"), name="check_ordinal_once_a_benchmark"
            ),
            # One open check a query, and one for the benchmark: two admins drawing at once get the same one.
            models.UniqueConstraint(
                fields=["query"], condition=models.Q(claim="query", status="checking"), name="check_one_open_a_query"
            ),
            models.UniqueConstraint(
                fields=["claim"],
                condition=models.Q(claim="benchmark", status="checking"),
                name="check_one_open_benchmark",
            ),
        ]

    def __str__(self) -> str:
        if self.claim == self.Claim.QUERY:
            return f"check {self.ordinal} of query {self.query_id}: {self.status}"
        return f"benchmark check {self.ordinal}: {self.status}"

    @property
    def stratum(self) -> "CheckStratum":
        """A query's check: its one stratum (the query's frame as frozen at the draw), read once (or from a
        prefetch of `strata`: the query list shows many checks' frames)."""
        cached = getattr(self, "_stratum", None)
        if cached is None:
            (cached,) = self.strata.all()
            self._stratum = cached
        return cached


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


class CheckStratum(models.Model):
    """One query's stratum of a check (a query's check has one): its frame as frozen at the draw, its confirmed
    positives then, and how many of its images the sample was drawn from."""

    completeness_check = models.ForeignKey(CompletenessCheck, on_delete=models.CASCADE, related_name="strata")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    frame_kind = models.CharField(max_length=12, choices=CompletenessCheck.Frame.choices)
    frame_depth = models.PositiveIntegerField(null=True, blank=True, help_text="`top` frames: ranks per ranking.")
    frame_taxa = models.JSONField(default=list, blank=True, help_text="`taxa` frames: the taxa as given.")
    frame_size = models.PositiveIntegerField()
    frame_ids = models.BinaryField(help_text="The frame's image ids, packed (annotator.completeness.frames).")
    found_ids = models.BinaryField(help_text="The frame's confirmed positives at the draw, packed.")
    sampled_from = models.PositiveIntegerField()

    class Meta:
        ordering = ["completeness_check", "query"]
        constraints = [models.UniqueConstraint(fields=["completeness_check", "query"], name="check_stratum_once")]

    def __str__(self) -> str:
        return f"query {self.query_id} of {self.completeness_check}"


class CheckImage(models.Model):
    """A (query, image) pair of a check's random sample, in the order drawn (the order it is shown)."""

    completeness_check = models.ForeignKey(CompletenessCheck, on_delete=models.CASCADE, related_name="images")
    query = models.ForeignKey(Query, on_delete=models.CASCADE, related_name="+")
    image = models.ForeignKey(Image, on_delete=models.PROTECT, related_name="+")
    position = models.PositiveIntegerField()

    class Meta:
        ordering = ["completeness_check", "position"]
        constraints = [models.UniqueConstraint(fields=["completeness_check", "query", "image"], name="check_pair_once")]
        indexes = [models.Index(fields=["query", "image"], name="check_image_pair")]

    def __str__(self) -> str:
        return f"image {self.image_id} of query {self.query_id} in {self.completeness_check}"
