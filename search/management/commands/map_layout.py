"""manage.py map_layout: compute the map of the collection, or place the images embedded since on it."""

import time
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from common.cli import progress_bar
from search import map_jobs
from search.models import JobStatus, MapLayout
from search.spec import configured_spec


class Command(BaseCommand):
    help = (
        "Compute the 2-D map of a model's embeddings (t-SNE on a sample, every other image placed beside its "
        "nearest sample images), or place the images embedded since the last run on the existing map. The same "
        "job as the admin's Map layouts › Compute the map; a run stopped half-way resumes where it stopped."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--model", metavar="NAME", help="the model whose map to compute (default: the configured)")
        parser.add_argument("--refit", action="store_true", help="fit a new map: every image moves")
        parser.add_argument("--here", action="store_true", help="run in this process even when a broker is set")

    def handle(self, model: str | None, refit: bool, here: bool, **options: Any) -> None:
        model_name = model or configured_spec().name
        self.stdout.write(f"Computing the map of {model_name} ...")
        started = time.monotonic()
        try:
            with progress_bar("placing", "img") as progress:
                job = map_jobs.start_map_layout(model_name, refit=refit, run_here=here, progress=progress)
                while job.status in map_jobs.UNFINISHED:  # a worker computes it: its row says how far it is
                    time.sleep(1)
                    job = MapLayout.objects.get(pk=job.pk)
                    if job.total:
                        progress(job.done, job.total)
        except FileNotFoundError as error:  # no embeddings of this model yet
            raise CommandError(str(error)) from None
        if job.status == JobStatus.FAILED:
            raise CommandError(f"Map layout {job.pk} failed: {job.error}")
        what = "Fitted a new map" if job.mode == "fitted" else f"Placed {job.done:,} new images on the map"
        self.stdout.write(
            self.style.SUCCESS(
                f"{what}: {job.points:,} images in {time.monotonic() - started:.1f} s; pages see it at their next load."
            )
        )
