"""Celery tasks of the evaluation app: thin wrappers over evaluation.scoring."""

from typing import Any

from celery import shared_task

from . import scoring


@shared_task(name="evaluation.score_run")
def score_run(scoring_id: int) -> dict[str, Any]:
    done = scoring.score(scoring_id)
    return {"scoring": scoring_id, "status": done.status, "report": done.report_id}


@shared_task(name="evaluation.resume_scorings")
def resume_scorings() -> list[int]:
    return scoring.resume_lost()
