"""Celery tasks of the search engine: thin wrappers over search.jobs.

A killed pool process: acks_late with task_reject_on_worker_lost (settings) returns its message to
the queue at once. A killed worker or machine: its unacknowledged messages come back only after the
broker's visibility timeout (hours), so the chunk's heartbeat tells the reaper below (Celery beat,
and `embed` while it follows a job) to queue it again sooner. A chunk done twice only replaces its
own part file.
"""

from celery import shared_task

from . import jobs, map_jobs
from .models import EmbeddingJob


@shared_task(name="search.embed_chunk")
def embed_chunk(chunk_id: int) -> dict[str, int | str]:
    chunk = jobs.run_chunk(chunk_id)
    return {"chunk": chunk_id, "status": chunk.status, "done": chunk.done, "failed": chunk.failed}


@shared_task(name="search.send_embedding_job")
def send_embedding_job(job_id: int) -> int:
    """Send a job's unfinished chunks to the workers (the admin's button, outside its request). In
    embedded mode the chunks run right here, in the background thread."""
    return jobs.enqueue(EmbeddingJob.objects.get(pk=job_id))


@shared_task(name="search.requeue_stale_chunks")
def requeue_stale_chunks() -> list[int]:
    """Run by Celery beat every minute: chunks whose worker died go back to the queue, and so do the pending
    chunks of jobs whose messages the broker lost (a Redis restarted without persistence)."""
    jobs.requeue_lost_chunks()
    return jobs.requeue_stale_chunks()


@shared_task(name="search.build_index")
def build_index(build_id: int) -> dict[str, int | str]:
    build = jobs.run_index_build(build_id)
    return {"build": build_id, "kind": build.built_kind, "vectors": build.vectors}


@shared_task(name="search.map_layout")
def map_layout(job_id: int) -> dict[str, int | str]:
    job = map_jobs.run_map_layout(job_id)
    return {"map_layout": job_id, "mode": job.mode, "points": job.points}


@shared_task(name="search.reap_jobs")
def reap_jobs() -> dict[str, list[int]]:
    """Celery beat's reaper for map layouts and index builds whose worker stopped: sent again (a layout resumes, a
    build starts over), or failed after three workers (search.map_jobs.reap, search.jobs.reap_index_builds)."""
    return {"map_layouts": map_jobs.reap(), "index_builds": jobs.reap_index_builds()}
