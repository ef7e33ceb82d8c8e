"""The side pane's model box: the query's last model job, its ranking, and the last VisRet drawings."""

from typing import Any

from annotator.labels import visibility
from annotator.methods.registry import MODEL_METHODS, page_ranking
from annotator.models import Query
from annotator.team import agreement


def model_box(query: Query, sight: visibility.Sight) -> dict[str, Any]:
    """What the side pane's model box shows: the last job, and the last VisRet drawings. The judge panel's
    agreement is scored against the final labels, so a viewer judging blind does not get it."""
    visret_job = query.rerank_jobs.filter(method="visret", status="done").first()
    job = query.rerank_jobs.first()
    judged = job is not None and job.method == "judges" and job.status == "done" and not sight.blind_in(query.pk)
    return {
        "query": query,
        "job": job,
        "judge_panel": agreement.judge_panel(query) if judged else None,
        "job_ranking": page_ranking(job.method) if job else None,
        "methods": MODEL_METHODS.values(),
        "drawings": list(visret_job.generated_images.all()) if visret_job else [],
    }
