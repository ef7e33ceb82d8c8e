"""Celery tasks of the annotator app: thin wrappers. Model calls run on the `models` queue, so that a GPU
machine's worker (`celery -A quire worker -Q models`) takes them and web and CPU workers never load a model."""

from celery import shared_task

from annotator.labeling import examples
from annotator.methods import rerank as reranking
from annotator.progress import figures
from annotator.releases import publish as releases
from annotator.team import agreement, costs, panel


@shared_task(name="annotator.rerank")
def rerank(job_id: int) -> str:
    """A rerank job (annotator.methods.rerank.run_job); run again after a crash, it asks only what is not cached."""
    return reranking.run_job(job_id).status


@shared_task(name="annotator.embed_example")
def embed_example(example_id: int) -> str:
    """An uploaded example's vector (annotator.labeling.examples.embed): on a CPU worker, not in the upload's
    request."""
    return examples.embed(example_id)


@shared_task(name="annotator.refresh_progress")
def refresh_progress(query_ids: list[int]) -> int:
    """The dashboard's completeness signals of `query_ids`, computed and cached (annotator.progress.figures.refresh)."""
    figures.refresh(query_ids)
    return len(query_ids)


@shared_task(name="annotator.requeue_stale_rerank_jobs")
def requeue_stale_rerank_jobs() -> list[int]:
    """Celery beat's reaper for model jobs whose worker died (annotator.methods.rerank.requeue_stale_jobs)."""
    return reranking.requeue_stale_jobs()


@shared_task(name="annotator.refresh_agreement")
def refresh_agreement(query_id: int) -> int:
    """A query's agreement figures with their bootstrap intervals, computed and cached (annotator.team.panel)."""
    panel.refresh(query_id)
    return query_id


@shared_task(name="annotator.create_release")
def create_release(job_id: int) -> str:
    """A release made in the background, its steps shown on the releases page (annotator.releases.publish.run_job)."""
    return releases.run_job(job_id).status


@shared_task(name="annotator.reap_release_jobs")
def reap_release_jobs() -> list[int]:
    """Celery beat's reaper for releases whose worker stopped (annotator.releases.publish.reap_jobs)."""
    return releases.reap_jobs()


@shared_task(name="annotator.team_report")
def team_report(query_ids: int | list[int] | None) -> int | list[int] | None:
    """The team's cost and quality figures (of one query, some, or every query), computed and cached
    (annotator.team.costs.refresh)."""
    costs.refresh(query_ids)
    return query_ids


@shared_task(name="annotator.agreement_report")
def agreement_report(query_ids: list[int] | None, resamples: int) -> list[int] | None:  # a list: JSON's tuple
    """agreement.json's figures (of some queries, or every query), computed and cached
    (annotator.team.agreement.refresh_report)."""
    agreement.refresh_report(query_ids, resamples)
    return query_ids
