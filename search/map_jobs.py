"""Map layouts as jobs: what the `map_layout` command, the Celery task and the admin's button call.

A layout runs in a worker when there is a broker (in this process without one, or with run_here), and keeps its
progress in its MapLayout row for the admin and the command's bar. The worker holds the job while it runs
(common.held); beat's reaper (`reap`, every minute) sends again a running job that no live worker holds, and it
resumes from the chunks already placed (search.layout), up to MAX_ATTEMPTS workers, then fails with a sentence.
The map in use is replaced when the new one is saved, never removed before (search.layout's refit folder).
"""

from django.conf import settings
from django.utils import timezone

from common import background, held

from . import layout
from .models import JobStatus, MapLayout
from .spec import configured_spec

UNFINISHED = (JobStatus.QUEUED, JobStatus.RUNNING)
JOB_KIND = "map_layout"  # common.held's key
MAX_ATTEMPTS = 3  # workers that may take a layout up before it fails: one killed by its own size would loop


def start_map_layout(
    model_name: str | None = None,
    *,
    refit: bool = False,
    run_here: bool = False,
    progress: layout.Progress | None = None,
) -> MapLayout:
    """The unfinished layout of this model if there is one (sent again: it resumes), else a new one; run in a
    worker when there is a broker, else (or with run_here) now."""
    model_name = model_name or configured_spec().name
    job = MapLayout.objects.filter(model_name=model_name, status__in=UNFINISHED).first()
    if job is None:
        job = MapLayout.objects.create(model_name=model_name, refit=refit)
    if run_here or settings.CELERY_TASK_ALWAYS_EAGER:
        run_map_layout(job.pk, progress=progress)
    else:
        background.send("search.map_layout", job.pk)
    job.refresh_from_db()
    return job


def run_map_layout(job_id: int, *, progress: layout.Progress | None = None) -> MapLayout:
    with held.holding(JOB_KIND, job_id):
        job = MapLayout.objects.get(pk=job_id)
        if job.status in (JobStatus.DONE, JobStatus.FAILED):  # a message delivered twice
            return job
        MapLayout.objects.filter(pk=job.pk).update(
            status=JobStatus.RUNNING, started_at=timezone.now(), error="", attempts=job.attempts + 1
        )

        def report(done: int, total: int) -> None:
            MapLayout.objects.filter(pk=job.pk).update(done=done, total=total)
            if progress:
                progress(done, total)

        def fitted_now() -> None:  # a refit resumed after a crash keeps the fit it made
            MapLayout.objects.filter(pk=job.pk).update(refit=False, mode="fitted")

        try:
            outcome = layout.compute(job.model_name, refit=job.refit, progress=report, fitted_now=fitted_now)
        except Exception as error:
            MapLayout.objects.filter(pk=job.pk).update(
                status=JobStatus.FAILED, error=str(error), finished_at=timezone.now()
            )
            raise
        refitted = MapLayout.objects.filter(pk=job.pk, mode="fitted").exists()  # by this job, before a crash maybe
        MapLayout.objects.filter(pk=job.pk).update(
            status=JobStatus.DONE,
            mode="fitted" if refitted else outcome.mode,
            done=outcome.placed,
            total=outcome.placed,
            points=outcome.points,
            finished_at=timezone.now(),
        )
    job.refresh_from_db()
    return job


def reap() -> list[int]:
    """Beat's reaper: each running layout that no live worker holds is sent again (it resumes), or fails with a
    sentence after MAX_ATTEMPTS workers took it up. The ids it handled."""
    return held.requeue_or_fail(
        JOB_KIND, MapLayout.objects.filter(status=JobStatus.RUNNING), MAX_ATTEMPTS, "search.map_layout",
        failed="Its worker stopped {attempts} times before the map was saved (killed, or out of memory): the map in "
        "use is unchanged. Look at the worker's log, then compute it again.",
    )  # fmt: skip
