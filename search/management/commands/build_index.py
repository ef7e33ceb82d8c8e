import time

from django.core.management.base import BaseCommand, CommandError

from search import jobs
from search.models import IndexBuild, JobStatus
from search.spec import configured_spec


class Command(BaseCommand):
    help = (
        "Build the FAISS index over the configured model's embeddings and swap it in. "
        "auto: exact (flat) up to 250,000 vectors or on a GPU, fast-scan IVF-PQ with exact re-scoring above. "
        "A fast-scan index takes new images in place (seconds) until the collection doubles; --rebuild retrains it."
    )

    def add_arguments(self, parser):
        parser.add_argument("--kind", choices=["auto", "flat", "fastscan", "ivfpq"], default="auto")
        parser.add_argument("--rebuild", action="store_true", help="retrain even if the index could be updated")
        parser.add_argument(
            "--here", action="store_true", help="build in this process even when a broker is configured"
        )
        parser.add_argument(
            "--model", metavar="NAME", help="the model whose vectors to index (default: the configured one)"
        )

    def handle(self, kind, here, model, rebuild, **options):
        model_name = model or configured_spec().name
        started = time.monotonic()
        self.stdout.write(f"Building the {kind} index for {model_name} ...")
        try:
            build = jobs.start_index_build(model_name, kind, run_here=here, rebuild=rebuild)
        except (FileNotFoundError, ValueError) as error:  # no embeddings yet; too few for IVF-PQ
            raise CommandError(str(error)) from None
        while build.status in jobs.UNFINISHED:  # a worker is building it
            time.sleep(1)
            build = IndexBuild.objects.get(pk=build.pk)
        if build.status == JobStatus.FAILED:
            raise CommandError(f"Index build {build.pk} failed: {build.error}")
        done = "Built" if build.mode == "built" else f"Updated ({build.mode.removeprefix('updated ')})"
        self.stdout.write(
            self.style.SUCCESS(
                f"{done} a {build.built_kind} index of {build.vectors:,} vectors "
                f"in {time.monotonic() - started:.1f} s; "
                "running searches pick it up at their next query."
            )
        )
