"""Published releases of the benchmark and the jobs that make them."""

from django.conf import settings
from django.db import models
from django.utils import timezone


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
