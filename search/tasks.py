"""Celery tasks of the search engine: thin wrappers over search.jobs.

acks_late (set for all tasks in settings) returns the message of a killed
worker to the queue; a chunk done twice only replaces its own part file.
"""
import logging

from celery import shared_task

from . import jobs
from .clip import WeightsUnavailable
from .models import EmbeddingChunk
from .store import StoreMismatch

log = logging.getLogger(__name__)


@shared_task(name="search.embed_chunk")
def embed_chunk(chunk_id: int) -> dict:
    try:
        chunk = jobs.run_chunk(chunk_id)
    except (WeightsUnavailable, StoreMismatch) as error:
        # No retry can fix these: stop the job and say why on its admin page.
        job_id = EmbeddingChunk.objects.filter(pk=chunk_id).values_list("job_id", flat=True).first()
        if job_id:
            jobs.fail_job(job_id, str(error))
        log.error("embedding chunk %s: %s", chunk_id, error)
        return {"chunk": chunk_id, "error": str(error)}
    return {"chunk": chunk_id, "done": chunk.done, "failed": chunk.failed}


@shared_task(name="search.build_index")
def build_index(build_id: int) -> dict:
    build = jobs.run_index_build(build_id)
    return {"build": build_id, "kind": build.built_kind, "vectors": build.vectors}
