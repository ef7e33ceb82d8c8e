"""The embedding job through a real Celery worker process on a real Redis broker.

The worker is a separate `celery -A quire worker` process sharing the test
database (PostgreSQL: SQLite test databases live in memory) and the data
directory, as workers on other machines share them in production. In CI
(QUIRE_REQUIRE_SERVICES=1) a missing Redis or PostgreSQL fails instead of skipping.
"""

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from django.core.management import call_command
from django.db import connection

from search.facade import search
from search.models import EmbeddingFailure, EmbeddingJob, IndexBuild, JobStatus
from tests.factories import make_collection

pytestmark = pytest.mark.django_db(transaction=True)

REDIS_URL = os.environ.get("QUIRE_TEST_REDIS_URL", "redis://127.0.0.1:6379/15")
REQUIRED = os.environ.get("QUIRE_REQUIRE_SERVICES") == "1"


def unavailable(reason: str):
    if REQUIRED:
        pytest.fail(f"{reason} (QUIRE_REQUIRE_SERVICES=1: CI must run this test)")
    pytest.skip(reason)


@pytest.fixture
def broker():
    client = redis.Redis.from_url(REDIS_URL)
    try:
        client.ping()
    except redis.ConnectionError:
        unavailable(f"no Redis at {REDIS_URL}")
    client.flushdb()
    yield REDIS_URL
    client.flushdb()


@pytest.fixture
def sending_to_broker(broker, tiny_settings):
    """This process sends tasks through the broker instead of running them eagerly."""
    from quire.celery import app

    saved = {key: app.conf[key] for key in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=broker, task_always_eager=False)
    app._after_fork()  # drops connection and producer pools made for the old broker
    tiny_settings.CELERY_TASK_ALWAYS_EAGER = False
    yield
    app.conf.update(saved)
    app._after_fork()


@pytest.fixture
def worker(broker, tiny_settings, tmp_path):
    if connection.vendor != "postgresql":
        unavailable("the worker process shares the test database, which needs PostgreSQL (set DATABASE_URL)")
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": broker,
        "QUIRE_DATA_DIR": str(tiny_settings.QUIRE_DATA_DIR),
        "QUIRE_CLIP_PRETRAINED": tiny_settings.QUIRE_CLIP_PRETRAINED,
        "QUIRE_EMBED_BATCH_SIZE": "4",
    }
    log_path = tmp_path / "worker.log"
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "celery",
                "-A",
                "quire",
                "worker",
                "--pool",
                "solo",
                "--loglevel",
                "info",
                "--without-gossip",
                "--without-mingle",
                "--hostname",
                f"test-{uuid.uuid4().hex[:8]}@%h",
            ],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
        )
    process.log_path = log_path
    yield process
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()


def wait_for(condition, worker, what: str, timeout: float = 180):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if condition():
            return
        if worker.poll() is not None:
            break
        time.sleep(0.5)
    pytest.fail(f"{what} did not happen; worker log:\n{worker.log_path.read_text()[-4000:]}")


def test_a_worker_embeds_the_collection_and_builds_the_index(sending_to_broker, worker, tmp_path, capsys):
    make_collection(tmp_path / "images", 14, broken={6: "corrupt"})
    call_command("embed", "--detach")
    assert "Queued 3 chunks for the Celery workers" in capsys.readouterr().out
    job = EmbeddingJob.objects.get()
    wait_for(lambda: IndexBuild.objects.filter(status=JobStatus.DONE).exists(), worker, "embedding and index build")
    job.refresh_from_db()
    assert (job.status, job.done, job.failed) == (JobStatus.DONE, 13, 1)
    assert set(job.chunks.values_list("worker", flat=True)) != {""}
    assert EmbeddingFailure.objects.get().image_id == 6
    hits = search(image_id=3, k=13)
    assert hits[0].image_id == 3 and len(hits) == 13

    # The command follows a worker's progress to the end, and a finished collection has nothing to do.
    make_collection(tmp_path / "images", 3, first_id=50)
    call_command("embed")
    assert f"Embedding job {EmbeddingJob.objects.latest('created_at').pk} done: 3 embedded" in capsys.readouterr().out
    call_command("embed")
    assert "Nothing to embed" in capsys.readouterr().out
