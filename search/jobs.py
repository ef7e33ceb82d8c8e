"""Embedding jobs and index builds: what the Celery tasks, the commands and the admin call.

Starting a job writes its chunks to the database; each chunk is then done by
`run_chunk`, in a Celery worker (through the broker) or in-process (embedded
mode, and the `embed` command's progress bar). A chunk's vectors go to one part
file of the store, so a chunk that is done twice (a killed worker, a resumed
job) just replaces its part. The worker that finishes the last chunk
consolidates the store and queues an index build.
"""

import datetime
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
from django.conf import settings
from django.db import transaction
from django.db.models import QuerySet, Sum
from django.utils import timezone

from catalog.facade import NotServable, contained_path
from catalog.models import Image
from common import background, held

from .device import search_device
from .exceptions import NoIndex, StoreMismatch, WeightsUnavailable
from .models import ChunkStatus, EmbeddingChunk, EmbeddingFailure, EmbeddingJob, IndexBuild, JobStatus
from .spec import ClipSpec, configured_spec, index_folder, store_root
from .store import NO_TAXON, Embeddings, EmbeddingStore

# The model stack (torch, open_clip: about 3 s to import) and FAISS load inside the functions
# that run a model or build an index, so that the admin, which imports this module, and every
# command that never embeds start fast.

UNFINISHED = (JobStatus.QUEUED, JobStatus.RUNNING)


def embedded_image_ids(model_name: str) -> np.ndarray:
    """Ids that already have a vector of this model (consolidated or in a part)."""
    try:
        return EmbeddingStore.existing(store_root(), model_name).embedded_image_ids()
    except FileNotFoundError:
        return np.empty(0, dtype=np.int64)


def start_embedding(
    *, spec: ClipSpec | None = None, chunk_size: int | None = None, retry_failed: bool = False
) -> EmbeddingJob | None:
    """The unfinished job of this model if there is one (to resume), else a new job for every
    image without a vector; None when there is nothing to embed."""
    spec = spec or configured_spec()
    chunk_size = chunk_size or settings.QUIRE_EMBED_CHUNK_SIZE
    if chunk_size < 1:
        raise ValueError("the chunk size must be at least 1")
    unfinished = EmbeddingJob.objects.filter(model_name=spec.name, status__in=UNFINISHED).first()
    if unfinished:
        return unfinished
    all_ids = np.fromiter(
        Image.objects.order_by("id").values_list("id", flat=True).iterator(chunk_size=50_000), dtype=np.int64
    )
    skip = [embedded_image_ids(spec.name)]
    failures = EmbeddingFailure.objects.filter(model_name=spec.name)
    if retry_failed:
        failures.delete()
    else:
        skip.append(np.fromiter(failures.values_list("image_id", flat=True), dtype=np.int64))
    missing = all_ids[~np.isin(all_ids, np.concatenate(skip))]
    if len(missing) == 0:
        return None
    with transaction.atomic():
        job = EmbeddingJob.objects.create(model_name=spec.name, total=len(missing), chunk_size=chunk_size)
        EmbeddingChunk.objects.bulk_create(
            EmbeddingChunk(
                job=job,
                number=number,
                first_image_id=int(ids[0]),
                last_image_id=int(ids[-1]),
                size=len(ids),
            )
            for number, ids in enumerate(np.array_split(missing, range(chunk_size, len(missing), chunk_size)))
        )
    return job


def unfinished_chunks(job: EmbeddingJob) -> "QuerySet[EmbeddingChunk]":
    return job.chunks.exclude(status=ChunkStatus.DONE).order_by("number")


def enqueue(job: EmbeddingJob, *, pending_only: bool = False) -> int:
    """Send every unfinished chunk (or only the pending ones) to the broker; return how many were sent. The
    broker is marked first (`_mark_sent`), so that the reaper can tell when it lost what was sent."""
    chunks = unfinished_chunks(job)
    chunk_ids = list(
        (chunks.filter(status=ChunkStatus.PENDING) if pending_only else chunks).values_list("id", flat=True)
    )
    _mark_sent(job.pk)
    for chunk_id in chunk_ids:
        background.send("search.embed_chunk", chunk_id)
    return len(chunk_ids)


# A key set in the broker's own Redis beside the messages of a job: a Redis restarted without persistence loses
# both at once (issue 37: the chunks stayed pending and `embed` followed for ever), so a job whose key is gone
# has had its queued chunks lost, and the reaper sends them again. A month: longer than any job waits.
SENT_MARK = "quire:embedding-job-sent:{job_id}"
SENT_MARK_SECONDS = 30 * 24 * 3600


def _broker_redis() -> Any:  # a redis.Redis: its client is untyped
    """The broker's Redis, or None where the broker is not Redis (embedded mode: nothing is queued)."""
    url = settings.CELERY_BROKER_URL
    if settings.CELERY_TASK_ALWAYS_EAGER or not url.startswith(("redis://", "rediss://")):
        return None
    import redis

    return redis.Redis.from_url(url, socket_connect_timeout=2, socket_timeout=2)


def _mark_sent(job_id: int) -> None:
    if (broker := _broker_redis()) is not None:
        broker.set(SENT_MARK.format(job_id=job_id), "1", ex=SENT_MARK_SECONDS)


def requeue_lost_chunks() -> list[int]:
    """Send again the pending chunks of every unfinished job whose messages the broker lost (its mark is gone:
    Redis restarted without persistence); returns those jobs' ids. Run by the reaper beside
    requeue_stale_chunks."""
    broker = _broker_redis()
    if broker is None:
        return []
    waiting = EmbeddingJob.objects.filter(status__in=UNFINISHED, chunks__status=ChunkStatus.PENDING).distinct()
    lost = [job for job in waiting if not broker.exists(SENT_MARK.format(job_id=job.pk))]
    for job in lost:
        enqueue(job, pending_only=True)
    return [job.pk for job in lost]


def _files_to_embed(chunk: EmbeddingChunk, model_name: str, store: EmbeddingStore) -> tuple[list[Any], list[Any]]:
    """The chunk's images to embed (those neither stored nor failed before), as the pipeline's ImageFiles, and the
    Failures of those whose file may not be served (the same checks as serving it: an allowed root, inside it, a
    raster image's name)."""
    from .pipeline import Failure, ImageFile  # torch's data loading: only where a chunk is embedded

    id_range = (chunk.first_image_id, chunk.last_image_id)
    stored = store.image_ids()  # consolidated rows only: this job's parts are other id ranges
    failed = EmbeddingFailure.objects.filter(model_name=model_name, image_id__range=id_range)
    skip = np.concatenate(
        [
            stored[(stored >= id_range[0]) & (stored <= id_range[1])],
            np.fromiter(failed.values_list("image_id", flat=True), dtype=np.int64),
        ]
    )
    rows = list(
        Image.objects.filter(id__range=id_range).order_by("id").values_list("id", "root__path", "file_name", "taxon_id")
    )
    wanted = ~np.isin(np.fromiter((row[0] for row in rows), dtype=np.int64, count=len(rows)), skip)
    files, refused = [], []
    for (image_id, root, file_name, taxon_id), keep in zip(rows, wanted, strict=True):
        if not keep:
            continue
        try:
            path = contained_path(root, file_name, image_id=image_id)
        except NotServable as error:
            refused.append(Failure(image_id, str(error)))
            continue
        files.append(ImageFile(image_id, path, NO_TAXON if taxon_id is None else taxon_id))
    return files, refused


def run_chunk(chunk_id: int, *, progress: Callable[[int], None] | None = None) -> EmbeddingChunk:
    """Embed one chunk (again, if it was started before and never finished)."""
    chunk = EmbeddingChunk.objects.select_related("job").get(pk=chunk_id)
    job = chunk.job
    if chunk.status == ChunkStatus.DONE or job.status == JobStatus.FAILED:
        return chunk
    now = timezone.now()
    EmbeddingChunk.objects.filter(pk=chunk.pk).update(
        status=ChunkStatus.RUNNING,
        attempts=chunk.attempts + 1,
        started_at=now,
        heartbeat_at=now,
        worker=f"{socket.gethostname()}:{os.getpid()}",
    )
    EmbeddingJob.objects.filter(pk=job.pk, started_at__isnull=True).update(started_at=now)
    EmbeddingJob.objects.filter(pk=job.pk, status=JobStatus.QUEUED).update(status=JobStatus.RUNNING)

    from .clip import get_embedder  # torch and open_clip: only where a chunk is embedded
    from .pipeline import embed_files  # (likewise: torch's data loading)

    try:
        embedder = get_embedder(ClipSpec.from_name(job.model_name))
        store = EmbeddingStore(store_root(), job.model_name, embedder.dim)
    except (WeightsUnavailable, StoreMismatch) as error:
        # No retry can fix these: stop the job (its other chunks then return at once) and say why.
        fail_job(job.pk, str(error))
        chunk.refresh_from_db()
        return chunk
    files, refused = _files_to_embed(chunk, job.model_name, store)
    result = embed_files(
        embedder,
        files,
        batch_size=settings.QUIRE_EMBED_BATCH_SIZE,
        loader_threads=settings.QUIRE_EMBED_LOADER_THREADS,
        loader_processes=settings.QUIRE_EMBED_LOADER_PROCESSES,
        progress=_heartbeat(chunk.pk, progress),
    )
    result.failures.extend(refused)
    if progress and refused:
        progress(len(refused))
    store.write_part(chunk.part_name, result.image_ids, result.taxon_ids, result.vectors)
    with transaction.atomic():
        EmbeddingFailure.objects.bulk_create(
            [
                EmbeddingFailure(model_name=job.model_name, image_id=f.image_id, job=job, reason=f.reason[:2000])
                for f in result.failures
            ],
            ignore_conflicts=True,
        )
        EmbeddingChunk.objects.filter(pk=chunk.pk).update(
            status=ChunkStatus.DONE, done=len(result.image_ids), failed=len(result.failures), finished_at=timezone.now()
        )
        # Totals are re-summed from the chunks, so a chunk done twice is counted once.
        totals = job.chunks.aggregate(done=Sum("done"), failed=Sum("failed"))
        EmbeddingJob.objects.filter(pk=job.pk).update(done=totals["done"] or 0, failed=totals["failed"] or 0)
    finish_if_complete(job.pk)
    chunk.refresh_from_db()
    return chunk


def _heartbeat(chunk_id: int, progress: Callable[[int], None] | None, every: float = 5.0) -> Callable[[int], None]:
    """A progress callback that also stamps the chunk's heartbeat (at most every `every` seconds), so
    that a chunk whose worker died can be told from one that is slow."""
    last = time.monotonic()

    def beat(done: int) -> None:
        nonlocal last
        if progress:
            progress(done)
        if time.monotonic() - last >= every:
            last = time.monotonic()
            EmbeddingChunk.objects.filter(pk=chunk_id, status=ChunkStatus.RUNNING).update(heartbeat_at=timezone.now())

    return beat


def requeue_stale_chunks(stale_seconds: float | None = None) -> list[int]:
    """Put back in the queue every running chunk whose worker has shown no sign of life for
    `stale_seconds` (default QUIRE_CHUNK_STALE_SECONDS): its worker was killed, or its machine lost.
    Returns their ids. Safe to run anywhere, any time: a chunk is taken back only while it is still
    stale (one UPDATE), and a chunk done twice only replaces its own part file.
    """
    stale_seconds = settings.QUIRE_CHUNK_STALE_SECONDS if stale_seconds is None else stale_seconds
    cutoff = timezone.now() - datetime.timedelta(seconds=stale_seconds)
    stale = list(
        EmbeddingChunk.objects.filter(
            status=ChunkStatus.RUNNING, heartbeat_at__lt=cutoff, job__status__in=UNFINISHED
        ).values_list("id", flat=True)
    )
    requeued = [
        chunk_id
        for chunk_id in stale
        if EmbeddingChunk.objects.filter(pk=chunk_id, status=ChunkStatus.RUNNING, heartbeat_at__lt=cutoff).update(
            status=ChunkStatus.PENDING
        )
    ]
    if requeued and not settings.CELERY_TASK_ALWAYS_EAGER:
        for chunk_id in requeued:
            background.send("search.embed_chunk", chunk_id)
    return requeued


def live_workers(timeout: float = 2.0) -> list[str]:
    """The names of the Celery workers that answer a ping (none in embedded mode)."""
    if settings.CELERY_TASK_ALWAYS_EAGER:
        return []
    replies = background.celery_app().control.ping(timeout=timeout) or []
    return [name for reply in replies for name in reply]


def finish_if_complete(job_id: int, *, build_index: bool = True) -> bool:
    """Consolidate the store once every chunk is done; then queue an index build. True if this call finished the job."""
    with transaction.atomic():
        job = EmbeddingJob.objects.select_for_update().get(pk=job_id)
        if job.status not in UNFINISHED or job.chunks.exclude(status=ChunkStatus.DONE).exists():
            return False
        EmbeddingStore.existing(store_root(), job.model_name).consolidate()
        job.status = JobStatus.DONE
        job.finished_at = timezone.now()
        job.save(update_fields=["status", "finished_at"])
    if build_index:
        start_index_build(job.model_name)
    return True


def fail_job(job_id: int, message: str) -> None:
    EmbeddingJob.objects.filter(pk=job_id).update(status=JobStatus.FAILED, error=message, finished_at=timezone.now())


# Index builds


BACKENDS = ("faiss", "milvus")
Progress = Callable[[int, int], None]  # (vectors done, of how many)


def record_index_build(
    model_name: str | None = None, kind: str = "auto", *, rebuild: bool = False, backend: str | None = None
) -> IndexBuild:
    """A queued index build (the kind checked first) for `backend` (default QUIRE_VECTOR_BACKEND); nothing
    runs yet. Without `rebuild`, a fast-scan index is updated in place when it can be (search.index.update),
    and a Milvus collection takes only the images it lacks (search.milvus.load_store)."""
    from . import index as faiss_index  # FAISS: only where an index is built

    backend = backend or settings.QUIRE_VECTOR_BACKEND
    if backend not in BACKENDS:
        raise ValueError(f"The vector backend is faiss or milvus, not {backend!r}.")
    faiss_index.choose_kind(0, kind)  # validates the kind before anything is recorded
    return IndexBuild.objects.create(
        model_name=model_name or configured_spec().name, kind=kind, rebuild=rebuild, backend=backend
    )


def start_index_build(
    model_name: str | None = None,
    kind: str = "auto",
    *,
    run_here: bool = False,
    rebuild: bool = False,
    backend: str | None = None,
    progress: Progress | None = None,
) -> IndexBuild:
    """Record a build and run it: in a worker when there is a broker, else (or with run_here) now, calling
    `progress` as a Milvus load goes."""
    build = record_index_build(model_name, kind, rebuild=rebuild, backend=backend)
    if run_here or settings.CELERY_TASK_ALWAYS_EAGER:
        run_index_build(build.pk, progress=progress)
    else:
        background.send("search.build_index", build.pk)
    build.refresh_from_db()
    return build


BUILD_KIND = "index_build"  # common.held's key: the worker holds the build while it runs
MAX_BUILD_ATTEMPTS = 3  # workers that may take a build up before it fails (one killed by its own size would loop)


def run_index_build(build_id: int, *, progress: Progress | None = None) -> IndexBuild:
    """Build as IndexBuild `build_id` asks, held by this worker while it runs: a worker killed half-way leaves it
    to beat's reaper (`reap_index_builds`), which sends it again (an index is swapped in whole, so a build starts
    over), then fails it with a sentence after MAX_BUILD_ATTEMPTS workers."""
    with held.holding(BUILD_KIND, build_id):
        build = IndexBuild.objects.get(pk=build_id)
        if build.status in (JobStatus.DONE, JobStatus.FAILED):  # a message delivered twice
            return build
        IndexBuild.objects.filter(pk=build.pk).update(
            status=JobStatus.RUNNING, started_at=timezone.now(), attempts=build.attempts + 1
        )
        _build(build, progress)
    build.refresh_from_db()
    return build


def reap_index_builds() -> list[int]:
    """Beat's reaper for index builds whose worker stopped (run_index_build)."""
    return held.requeue_or_fail(
        BUILD_KIND, IndexBuild.objects.filter(status=JobStatus.RUNNING), MAX_BUILD_ATTEMPTS, "search.build_index",
        failed="Its worker stopped {attempts} times before the index was saved (killed, or out of memory): the index "
        "in use is unchanged. Look at the worker's log, then build it again.",
    )  # fmt: skip


def _build(build: IndexBuild, progress: Progress | None) -> None:
    try:
        embeddings = EmbeddingStore.existing(store_root(), build.model_name).load()
        if len(embeddings) == 0:
            raise FileNotFoundError(f"No embeddings for {build.model_name} yet: run `manage.py embed` first.")
        if build.backend == "milvus":
            kind, mode, vectors = _load_into_milvus(build, embeddings, progress)
        else:
            kind, mode, vectors = _build_faiss_index(build, embeddings)
    except Exception as error:
        IndexBuild.objects.filter(pk=build.pk).update(
            status=JobStatus.FAILED, error=str(error), finished_at=timezone.now()
        )
        raise
    IndexBuild.objects.filter(pk=build.pk).update(
        status=JobStatus.DONE, built_kind=kind[:16], mode=mode[:40], vectors=vectors, finished_at=timezone.now()
    )


def _build_faiss_index(build: IndexBuild, embeddings: Embeddings) -> tuple[str, str, int]:
    """Build (or update in place) the model's FAISS index and swap it in; returns (the kind, the mode, the
    vectors it holds)."""
    from . import index as faiss_index  # FAISS: only where an index is built

    kind = faiss_index.choose_kind(len(embeddings), build.kind)
    folder = index_folder(build.model_name)
    updated = _update_in_place(faiss_index, folder, embeddings, kind) if not build.rebuild else None
    if updated is None:
        # On a GPU worker the IVF's k-means runs on the card; the index saved is the same CPU index.
        clustering = faiss_index.card_clustering(embeddings.vectors.shape[1]) if search_device() == "cuda" else None
        built = faiss_index.build(embeddings, kind, clustering=clustering)
        faiss_index.save(built, folder, kind=kind, count=len(embeddings))
    return kind, "built" if updated is None else f"updated +{updated[0]:,} -{updated[1]:,}", len(embeddings)


def _load_into_milvus(build: IndexBuild, embeddings: Embeddings, progress: Progress | None) -> tuple[str, str, int]:
    """Load the store into the model's Milvus collection (search.milvus.load_store), the build's row showing
    how far it is; returns (the index type, the mode, the vectors the collection holds)."""
    from . import milvus  # pymilvus: only where Milvus is used

    def report(done: int, total: int) -> None:
        IndexBuild.objects.filter(pk=build.pk).update(done=done, total=total)
        if progress:
            progress(done, total)

    loaded = milvus.load_store(
        build.model_name, embeddings, rebuild=build.rebuild, progress=report, indexing=report
    )  # the row's done/total: rows inserted, then rows indexed
    indexed = "all indexed" if loaded.ready else f"{loaded.indexed:,} indexed, the server indexing the rest"
    return loaded.index_type, f"loaded +{loaded.added:,} -{loaded.removed:,}, {indexed}", loaded.total


def _update_in_place(
    faiss_index: ModuleType, folder: Path, embeddings: Embeddings, kind: str
) -> tuple[int, int] | None:
    """(added, removed) when the current fast-scan index could take the store's new images without
    retraining (an embedding job's 10,000 images: seconds, not a 2-minute build), else None."""
    try:
        index, info = faiss_index.load(folder)
    except NoIndex:
        return None
    if kind != info.get("kind"):
        return None
    changes: tuple[int, int] | None = faiss_index.update(index, info, embeddings)
    if changes is not None:
        faiss_index.save(index, folder, kind=kind, count=len(embeddings), trained_on=info["trained_on"])
    return changes
