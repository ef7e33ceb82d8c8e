"""Runs uploaded through the web pages and the reports made from them, kept for later comparison."""

from django.conf import settings
from django.db import models
from django.utils import timezone


class SavedRun(models.Model):
    name = models.CharField(max_length=200)
    file = models.FileField(upload_to="runs/%Y/%m/")
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class SavedReport(models.Model):
    run = models.ForeignKey(SavedRun, on_delete=models.CASCADE, related_name="reports")
    protocol = models.CharField(max_length=16)
    k = models.PositiveIntegerField()
    ground_truth = models.CharField(max_length=200, help_text="Where the relevance labels came from.")
    result = models.JSONField(help_text="The report as `manage.py evaluate --json` writes it.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]
        permissions = [("evaluate_runs", "Can score runs and read their reports")]

    def __str__(self) -> str:
        return f"{self.run} · {self.protocol}@{self.k}"


class SavedSimulation(models.Model):
    """An oracle-annotator replay (`manage.py simulate_labeling`): labels spent per strategy to find
    the positives, kept for the evaluation pages."""

    name = models.CharField(max_length=200)
    ground_truth = models.CharField(max_length=200, help_text="Where the positives came from.")
    result = models.JSONField(help_text="What `manage.py simulate_labeling --json` writes.")
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return self.name


class Scoring(models.Model):
    """An uploaded run waiting to be scored, being scored, or scored: the upload answers at once (202)
    and a worker (or, with no broker, a background thread) does the work (evaluation/scoring.py)."""

    class Status(models.TextChoices):
        QUEUED = "queued", "waiting for a worker"
        RUNNING = "running", "scoring"
        DONE = "done", "done"
        FAILED = "failed", "failed"

    name = models.CharField(max_length=200)
    protocol = models.CharField(max_length=16)
    k = models.PositiveIntegerField(null=True, blank=True, help_text="Empty: the protocol's (50, or all candidates).")
    normaliser = models.CharField(max_length=32, blank=True)
    ties = models.CharField(max_length=16, default="average")
    # The files as uploaded; messages name them by the names they were uploaded under.
    run = models.FileField(upload_to="scorings/%Y/%m/")
    run_name = models.CharField(max_length=255)
    qrels = models.FileField(upload_to="scorings/%Y/%m/", blank=True)
    qrels_name = models.CharField(max_length=255, blank=True)
    queries = models.FileField(upload_to="scorings/%Y/%m/", blank=True)
    queries_name = models.CharField(max_length=255, blank=True)
    # A release of Quire's (manage.py release) whose qrels and queries the run is scored against, by name.
    release = models.CharField(max_length=100, blank=True)
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    error = models.TextField(blank=True, help_text="Why scoring failed, naming the file and line to fix.")
    report = models.OneToOneField(SavedReport, null=True, blank=True, on_delete=models.SET_NULL)
    uploaded_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, on_delete=models.SET_NULL)
    # The upload form's own key: the same form sent twice (a double click) is one scoring.
    submission = models.UUIDField(null=True, blank=True, unique=True, editable=False)
    created_at = models.DateTimeField(default=timezone.now)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.name} ({self.get_status_display()})"

    @property
    def finished(self) -> bool:
        return self.status in (self.Status.DONE, self.Status.FAILED)
