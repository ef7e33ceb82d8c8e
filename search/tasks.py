"""Celery tasks of the search engine: thin wrappers over search.jobs.

acks_late (set for all tasks in settings) returns the message of a killed
worker to the queue; a chunk done twice only replaces its own part file.
"""

from celery import shared_task

from . import jobs


@shared_task(name="search.embed_chunk")
def embed_chunk(chunk_id: int) -> dict:
    chunk = jobs.run_chunk(chunk_id)
    return {"chunk": chunk_id, "status": chunk.status, "done": chunk.done, "failed": chunk.failed}


@shared_task(name="search.build_index")
def build_index(build_id: int) -> dict:
    build = jobs.run_index_build(build_id)
    return {"build": build_id, "kind": build.built_kind, "vectors": build.vectors}
