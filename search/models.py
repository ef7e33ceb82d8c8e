"""Jobs of the search engine, kept in the database so that every worker and the admin see them.

An embedding job is cut into chunks of consecutive image ids. A chunk is the
unit a Celery task does, retries and resumes: its vectors go to one part file
of the embedding store, written atomically, so doing a chunk twice is harmless.
"""

from django.db import models
from django.utils import timezone


class JobStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    RUNNING = "running", "Running"
    DONE = "done", "Done"
    FAILED = "failed", "Failed"


class JobRecord(models.Model):
    """What every job shows on its admin page: where it is, when it ran, why it failed."""

    status = models.CharField(max_length=16, choices=JobStatus.choices, default=JobStatus.QUEUED)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)

    class Meta:
        abstract = True
        ordering = ["-created_at"]


class EmbeddingJob(JobRecord):
    model_name = models.CharField(max_length=1024, help_text="The CLIP model (ClipSpec.name) the vectors come from.")
    total = models.PositiveIntegerField(default=0, help_text="Images to embed when the job started.")
    done = models.PositiveIntegerField(default=0, help_text="Images embedded so far.")
    failed = models.PositiveIntegerField(default=0, help_text="Images skipped: missing or unreadable.")
    chunk_size = models.PositiveIntegerField(default=5000)

    def __str__(self) -> str:
        return f"embedding job {self.pk} ({self.model_name})"

    @property
    def processed(self) -> int:
        return self.done + self.failed

    @property
    def rate(self) -> float | None:
        """Images a second since the job started."""
        if not self.started_at or not self.processed:
            return None
        elapsed = ((self.finished_at or timezone.now()) - self.started_at).total_seconds()
        return self.processed / elapsed if elapsed > 0 else None

    @property
    def eta_seconds(self) -> float | None:
        rate = self.rate
        if self.status != JobStatus.RUNNING or not rate:
            return None
        return max(0, self.total - self.processed) / rate


class ChunkStatus(models.TextChoices):
    PENDING = "pending", "Pending"
    RUNNING = "running", "Running"
    DONE = "done", "Done"


class EmbeddingChunk(models.Model):
    job = models.ForeignKey(EmbeddingJob, on_delete=models.CASCADE, related_name="chunks")
    number = models.PositiveIntegerField()
    first_image_id = models.BigIntegerField()
    last_image_id = models.BigIntegerField()
    size = models.PositiveIntegerField(help_text="Images to embed in this id range when the job started.")
    status = models.CharField(max_length=16, choices=ChunkStatus.choices, default=ChunkStatus.PENDING)
    attempts = models.PositiveIntegerField(default=0)
    done = models.PositiveIntegerField(default=0)
    failed = models.PositiveIntegerField(default=0)
    worker = models.CharField(max_length=255, blank=True)
    started_at = models.DateTimeField(null=True, blank=True)
    heartbeat_at = models.DateTimeField(
        null=True, blank=True, help_text="Last sign of life of the worker running it (after every batch)."
    )
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["job", "number"]
        constraints = [models.UniqueConstraint(fields=["job", "number"], name="embedding_chunk_number")]
        indexes = [models.Index(fields=["job", "status"], name="embedding_chunk_status")]

    def __str__(self) -> str:
        return f"chunk {self.number} of job {self.job_id}"

    @property
    def part_name(self) -> str:
        return f"job{self.job_id}-chunk{self.number:06d}"


class EmbeddingFailure(models.Model):
    """An image that could not be embedded, and why. Later jobs of the same model skip it."""

    model_name = models.CharField(max_length=1024)
    image_id = models.BigIntegerField()
    job = models.ForeignKey(EmbeddingJob, null=True, on_delete=models.SET_NULL, related_name="failures")
    reason = models.TextField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["image_id"]
        constraints = [models.UniqueConstraint(fields=["model_name", "image_id"], name="embedding_failure_once")]

    def __str__(self) -> str:
        return f"image {self.image_id}: {self.reason}"


class MapLayout(JobRecord):
    """Computing or updating the map of one model's embeddings (search/layout.py)."""

    model_name = models.CharField(max_length=1024)
    refit = models.BooleanField(default=False, help_text="Fit a new map instead of placing new images on the old.")
    mode = models.CharField(max_length=16, blank=True, help_text="fitted (a new map) or updated (new images placed).")
    done = models.PositiveIntegerField(default=0, help_text="Images placed so far.")
    total = models.PositiveIntegerField(default=0, help_text="Images this run places.")
    points = models.PositiveIntegerField(default=0, help_text="Images on the map when it finished.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Workers that took it up (search.map_jobs).")

    def __str__(self) -> str:
        return f"map layout {self.pk} ({self.model_name})"


class IndexBuild(JobRecord):
    model_name = models.CharField(max_length=1024)
    kind = models.CharField(
        max_length=16, help_text="auto, flat, fastscan or ivfpq as asked; the built kind is in `built_kind`."
    )
    built_kind = models.CharField(max_length=16, blank=True)
    rebuild = models.BooleanField(default=False, help_text="Retrain even if the index could be updated in place.")
    attempts = models.PositiveSmallIntegerField(default=0, help_text="Workers that took it up (search.jobs).")
    mode = models.CharField(
        max_length=120,
        blank=True,
        help_text="built, updated +added -removed in place, or loaded +added -removed and how much is indexed.",
    )
    vectors = models.PositiveIntegerField(default=0)
    backend = models.CharField(
        max_length=16, default="faiss", help_text="faiss (an index file) or milvus (a load into the vector database)."
    )
    done = models.PositiveIntegerField(
        default=0, help_text="Vectors loaded so far (a load into Milvus), then vectors the server has indexed."
    )
    total = models.PositiveIntegerField(default=0, help_text="Vectors this load inserts, then the collection holds.")

    def __str__(self) -> str:
        return f"index build {self.pk} ({self.kind})"
