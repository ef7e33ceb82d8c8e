# ruff: noqa: F811  (pytest fixtures imported from the embedding worker tests are parameters here)
"""An uploaded run scored by a real Celery worker through a real Redis broker: the upload answers 202
before any worker has looked at it, and the status page turns into the report once the worker is done."""

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation.models import Scoring
from tests.search.test_celery_worker import broker, sending_to_broker, start_worker, wait_for  # noqa: F401

from .test_evaluate import QRELS, QUERIES
from .test_pages import RUN_A

# The worker process shares the test database, which must be PostgreSQL (a file, not SQLite's memory).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql, pytest.mark.slow]


def test_an_upload_is_scored_on_the_worker_not_in_the_request(client, sending_to_broker, start_worker, settings):
    settings.MEDIA_ROOT = settings.QUIRE_DATA_DIR / "media"  # where the worker, given this data dir, looks
    client.force_login(get_user_model().objects.create_superuser("boss", "b@example.org", "pw"))
    data = {
        "name": "on the worker",
        "protocol": "fullrank",
        "k": 50,
        "run": SimpleUploadedFile("run.csv", RUN_A.encode()),
        "qrels": SimpleUploadedFile("qrels.csv", QRELS.encode()),
        "queries": SimpleUploadedFile("queries.csv", QUERIES.encode()),
    }
    response = client.post("/evaluation/", data)
    job = Scoring.objects.get()
    assert response.status_code == 202 and job.status == Scoring.Status.QUEUED  # no worker yet: nothing ran
    assert "waiting for a worker" in client.get(f"/evaluation/scorings/{job.pk}/").content.decode()

    worker = start_worker(pool="solo", queues="celery")
    wait_for(lambda: Scoring.objects.get(pk=job.pk).finished, worker, "the scoring")
    job.refresh_from_db()
    assert job.status == Scoring.Status.DONE, job.error
    assert job.report.result["overall"]["ap"] == pytest.approx((1.0 + 1.0 + 0.0) / 3)
    assert "evaluation.score_run" in worker.log_path.read_text()
    poll = client.get(f"/evaluation/scorings/{job.pk}/", HTTP_HX_REQUEST="true")
    assert poll["HX-Redirect"] == f"/evaluation/reports/{job.report_id}/"
