"""What model methods leave behind: reranking scores and jobs, generated images, pre-labels from judge panels."""

from django.conf import settings
from django.db import models
from django.utils import timezone

from annotator.models.queries import Query
from catalog.models import Image


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
