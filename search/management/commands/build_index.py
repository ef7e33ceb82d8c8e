import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from tqdm import tqdm

from search import jobs
from search.exceptions import SearchUnavailable
from search.models import IndexBuild, JobStatus
from search.spec import configured_spec


class Command(BaseCommand):
    help = (
        "Build the search index over the configured model's embeddings and swap it in. "
        "FAISS (the default backend): exact (flat) up to 250,000 vectors, fast-scan IVF with exact "
        "re-scoring above; a fast-scan index takes new images in place (seconds) until the collection doubles, "
        "--rebuild retrains it. Milvus (--backend milvus, or QUIRE_VECTOR_BACKEND=milvus): loads the images the "
        "collection at QUIRE_MILVUS_URI lacks, with a progress bar; a load stopped half-way resumes where it "
        "stopped; --rebuild drops the collection and loads it all."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--backend",
            choices=jobs.BACKENDS,
            default=None,
            help="where the vectors are searched (default: QUIRE_VECTOR_BACKEND, which is faiss unless set)",
        )
        parser.add_argument(
            "--kind",
            choices=["auto", "flat", "fastscan", "ivfpq"],
            default="auto",
            help="FAISS's index kind (Milvus builds QUIRE_MILVUS_INDEX)",
        )
        parser.add_argument(
            "--rebuild",
            action="store_true",
            help="FAISS: retrain even if the index could be updated; Milvus: drop the collection and load it all",
        )
        parser.add_argument(
            "--here", action="store_true", help="build in this process even when a broker is configured"
        )
        parser.add_argument(
            "--model", metavar="NAME", help="the model whose vectors to index (default: the configured one)"
        )

    def handle(self, backend: str, kind: str, here: bool, model: str | None, rebuild: bool, **options: Any) -> None:
        backend = backend or settings.QUIRE_VECTOR_BACKEND
        model_name = model or configured_spec().name
        started = time.monotonic()
        if backend == "milvus":
            self.stdout.write(
                f"Loading {model_name}'s vectors into Milvus at QUIRE_MILVUS_URI={settings.QUIRE_MILVUS_URI} ..."
            )
        else:
            self.stdout.write(f"Building the {kind} index for {model_name} ...")
        bar = None

        def progress(done: int, total: int) -> None:
            nonlocal bar
            if bar is not None and (total != bar.total or done < bar.n):  # Milvus: inserted, now indexing
                bar.close()
                bar = tqdm(total=total, desc="indexing", unit="vec", unit_scale=True, disable=None)
            if bar is None:
                bar = tqdm(total=total, desc="loading", unit="vec", unit_scale=True, disable=None)
            bar.update(done - bar.n)

        try:
            build = jobs.start_index_build(
                model_name, kind, run_here=here, rebuild=rebuild, backend=backend, progress=progress
            )
            while build.status in jobs.UNFINISHED:  # a worker is building it: its row says how far it is
                time.sleep(1)
                build = IndexBuild.objects.get(pk=build.pk)
                if build.total:
                    progress(build.done, build.total)
        # No embeddings yet; too few for IVF-PQ; a vector database that cannot be reached or holds other vectors.
        except (FileNotFoundError, ValueError, SearchUnavailable) as error:
            raise CommandError(str(error)) from None
        finally:
            if bar is not None:
                bar.close()
        if build.status == JobStatus.FAILED:
            raise CommandError(f"Index build {build.pk} failed: {build.error}")
        if build.backend == "milvus":
            self.stdout.write(
                self.style.SUCCESS(
                    f"Loaded {build.mode.removeprefix('loaded ')}: the {build.built_kind} collection holds "
                    f"{build.vectors:,} vectors, in {time.monotonic() - started:.1f} s. Searches see every row at "
                    "once; rows not indexed yet are read exhaustively until the server has indexed them."
                )
            )
            return
        done = "Built" if build.mode == "built" else f"Updated ({build.mode.removeprefix('updated ')})"
        self.stdout.write(
            self.style.SUCCESS(
                f"{done} a {build.built_kind} index of {build.vectors:,} vectors "
                f"in {time.monotonic() - started:.1f} s; "
                "running searches pick it up at their next query."
            )
        )
