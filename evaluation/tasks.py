"""Celery tasks of the evaluation app: thin wrappers over evaluation.scoring."""

from celery import shared_task

import quire.celery  # noqa: F401  (the configured app: these tasks are sent through it, never a default one)

from . import scoring


@shared_task(name="evaluation.score_run")
def score_run(scoring_id: int) -> dict:
    done = scoring.score(scoring_id)
    return {"scoring": scoring_id, "status": done.status, "report": done.report_id}
