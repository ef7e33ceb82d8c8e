"""Redis stopped (issue 27): pages answer without their cache, and a job start refuses with a sentence (503)
within seconds, its record ending failed, never "queued" for ever.

The Redis here is a real server of the test's own, on a free port, stopped mid-test; the shared one that other
tests use stays up.
"""

import os
import time

import pytest
from django.contrib.auth import get_user_model
from django.urls import reverse

from annotator.models import RerankJob
from evaluation.models import Scoring
from tests.evaluation.test_evaluate import QRELS

pytestmark = pytest.mark.django_db(transaction=True)
REQUIRED = os.environ.get("QUIRE_REQUIRE_SERVICES") == "1"


@pytest.fixture
def cache_on(own_redis, settings):
    url, stop = own_redis.url, own_redis.stop
    settings.CACHES = {
        "default": {
            "BACKEND": "quire.cache.ForgivingRedisCache",
            "LOCATION": url,
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1},
        }
    }
    return stop


@pytest.fixture
def broker_on(own_redis, settings):
    """This process queues tasks on the test's own Redis (nothing runs them: the broker is stopped first)."""
    from quire.celery import app

    url, stop = own_redis.url, own_redis.stop
    saved = {key: app.conf[key] for key in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=url, task_always_eager=False)
    app._after_fork()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    yield stop
    app.conf.update(saved)
    app._after_fork()


def test_pages_and_the_api_work_with_the_cache_away(labeling, client, cache_on):
    from django.core.cache import cache

    cache.set("quire:probe", 1)
    assert cache.get("quire:probe") == 1, "the cache should be the test's Redis while it runs"
    cache_on()  # Redis stops
    client.force_login(labeling["admin"])
    query = labeling["query"]
    for url in (
        "/",
        reverse("label", args=[query.pk]),
        reverse("dashboard"),
        reverse("dashboard-query", args=[query.pk]),
    ):
        assert client.get(url).status_code == 200, url
    assert client.get("/api/queries/").status_code == 200  # the throttles count in the cache


def test_a_rerank_start_with_the_broker_away_is_a_503_and_its_job_ends_failed(labeling, client, broker_on, settings):
    settings.QUIRE_LMM_BASE_URL, settings.QUIRE_LMM_MODEL = "http://127.0.0.1:9/v1", "tiny-vlm"
    broker_on()  # Redis stops
    client.force_login(labeling["annotator"])
    started = time.monotonic()
    response = client.post(reverse("start-rerank", args=[labeling["query"].pk]), {"method": "yesno"})
    assert time.monotonic() - started < 15  # not Celery's default retries; a generous bound for a busy machine
    assert response.status_code == 503
    assert "job queue (Redis) is not answering" in response.content.decode()
    job = RerankJob.objects.get()
    assert job.status == "failed" and "not answering" in job.error


def test_an_evaluation_upload_with_the_broker_away_is_a_503_and_its_scoring_ends_failed(client, broker_on):
    from django.core.files.uploadedfile import SimpleUploadedFile

    client.force_login(get_user_model().objects.create_superuser("boss", "b@example.org", "pw"))
    broker_on()
    data = {"name": "run A", "protocol": "fullrank", "k": 50, "normaliser": ""}
    data["run"] = SimpleUploadedFile("run.csv", b"query_id,image_id,score\n1,10,3\n")
    data["qrels"] = SimpleUploadedFile("qrels.csv", QRELS.encode())
    response = client.post("/evaluation/", data)
    assert response.status_code == 503 and "not answering" in response.content.decode()
    scoring = Scoring.objects.get()
    assert scoring.status == "failed" and not scoring.run  # its files are not kept either
