import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from search import jobs
from search.exceptions import WeightsUnavailable
from search.models import EmbeddingFailure, EmbeddingJob, JobStatus
from search.spec import ClipSpec, configured_spec


class Command(BaseCommand):
    help = (
        "Embed every image that has no vector of the configured CLIP model yet. With a broker the chunks go to "
        "Celery workers and this command follows their progress; without one they run here. Running it again "
        "resumes an unfinished job."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--chunk-size", type=int, help=f"images per task (default {settings.QUIRE_EMBED_CHUNK_SIZE})"
        )
        parser.add_argument(
            "--retry-failed", action="store_true", help="try again the images earlier jobs could not read"
        )
        parser.add_argument("--detach", action="store_true", help="queue the chunks and return without waiting")
        parser.add_argument(
            "--model",
            metavar="NAME",
            help="embed with this model instead of the configured one, named as its vectors are "
            "(e.g. ViT-H-14-378-quickgelu/dfn5b, or local-dir:/path/to/folder)",
        )

    def handle(
        self, chunk_size: int | None, retry_failed: bool, detach: bool, model: str | None, **options: Any
    ) -> None:
        from search.clip import check_weights  # the model stack: only once there is something to embed

        spec = ClipSpec.from_name(model) if model else configured_spec()
        if spec.random_weights:
            self.stderr.write(
                self.style.WARNING(
                    f"{spec.name} has random weights: rankings are meaningless until real weights are configured."
                )
            )
        try:
            check_weights(spec)
            job = jobs.start_embedding(spec=spec, chunk_size=chunk_size, retry_failed=retry_failed)
        except (WeightsUnavailable, ValueError) as error:
            raise CommandError(str(error)) from None
        if job is None:
            skipped = EmbeddingFailure.objects.filter(model_name=spec.name).count()
            note = f" ({skipped} unreadable images skipped; --retry-failed tries them again)" if skipped else ""
            self.stdout.write(self.style.SUCCESS(f"Nothing to embed: every image has a {spec.name} vector{note}."))
            return
        resumed = job.processed > 0 or job.status == JobStatus.RUNNING
        self.stdout.write(
            f"{'Resuming' if resumed else 'Started'} embedding job {job.pk}: {job.total:,} images, model {spec.name}."
        )
        bar = tqdm(total=job.total, initial=job.processed, desc="embedding", unit="img", unit_scale=True, disable=None)
        try:
            if settings.CELERY_TASK_ALWAYS_EAGER:
                self._run_here(job, bar)
            else:
                sent = jobs.enqueue(job)
                self.stdout.write(f"Queued {sent} chunks for the Celery workers.")
                if detach:
                    return
                self._follow(job, bar)
        except KeyboardInterrupt:
            raise CommandError(
                f"Interrupted. Job {job.pk} keeps its finished chunks: run `manage.py embed` again to resume."
            ) from None
        finally:
            bar.close()
        self._report(job.pk)

    def _run_here(self, job: EmbeddingJob, bar: tqdm) -> None:
        for chunk_id in list(jobs.unfinished_chunks(job).values_list("id", flat=True)):
            jobs.run_chunk(chunk_id, progress=bar.update)  # returns at once once the job has failed

    def _follow(self, job: EmbeddingJob, bar: tqdm) -> None:
        """Follow the workers' progress. Chunks whose worker died are queued again; if nothing moves for
        QUIRE_EMBED_STALL_SECONDS and no worker answers, say so and stop (the job keeps its chunks)."""
        last_progress, last_moved, warned = job.processed, time.monotonic(), False
        while True:
            job.refresh_from_db()
            bar.update(job.processed - bar.n)
            if job.status not in jobs.UNFINISHED:
                return
            if job.processed != last_progress:
                last_progress, last_moved, warned = job.processed, time.monotonic(), False
            still = time.monotonic() - last_moved
            if still >= settings.QUIRE_CHUNK_STALE_SECONDS / 2 and jobs.requeue_lost_chunks():
                bar.write("The broker lost the queued chunks (Redis restarted without its data): sent them again.")
                last_moved = time.monotonic()
            elif still >= settings.QUIRE_CHUNK_STALE_SECONDS / 2 and (requeued := jobs.requeue_stale_chunks()):
                bar.write(f"{len(requeued)} chunk(s) whose worker stopped answering were queued again.")
                last_moved = time.monotonic()
            elif still >= settings.QUIRE_EMBED_STALL_SECONDS:
                if not jobs.live_workers():
                    raise CommandError(
                        f"No progress for {still:.0f} s and no Celery worker answers: start one with "
                        f"`celery -A quire worker` (it takes the queued chunks), then run `manage.py embed` "
                        f"again to follow job {job.pk}."
                    )
                if not warned:
                    bar.write(f"No progress for {still:.0f} s; the workers are alive (a long chunk?). Still following.")
                    warned = True
            time.sleep(1)

    def _report(self, job_id: int) -> None:
        job = EmbeddingJob.objects.get(pk=job_id)
        if job.status == JobStatus.FAILED:
            raise CommandError(f"Embedding job {job.pk} failed: {job.error}")
        rate = f" at {job.rate:,.1f} images/s" if job.rate else ""
        self.stdout.write(
            self.style.SUCCESS(
                f"Embedding job {job.pk} {job.get_status_display().lower()}: {job.done:,} embedded{rate}."
            )
        )
        if job.failed:
            self.stdout.write(
                self.style.WARNING(f"{job.failed:,} images were skipped (missing or unreadable), for example:")
            )
            for failure in job.failures.all()[:5]:
                self.stdout.write(f"  image {failure.image_id}: {failure.reason}")
