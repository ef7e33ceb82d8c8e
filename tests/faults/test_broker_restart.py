"""Redis restarted under a running worker (issue 37): the worker comes back, under the supervisor the README
documents (deploy/supervisord.conf), and the chunks Redis lost are sent again by the reaper.

Real processes: a redis-server of the test's own (killed: a restart without persistence loses what was queued),
supervisord running deploy/supervisor/quire.conf's worker and beat, and the worker's own process killed too.
"""

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import redis
from django.core.management import call_command
from django.db import connection

from search import jobs
from search.models import ChunkStatus, EmbeddingJob
from tests.factories import make_collection
from tests.faults.conftest import REQUIRED

pytestmark = pytest.mark.django_db(transaction=True)
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def queued_on(own_redis, settings):
    """This process sends tasks to the test's own Redis."""
    from quire.celery import app

    saved = {key: app.conf[key] for key in ("broker_url", "task_always_eager")}
    app.conf.update(broker_url=own_redis.url, task_always_eager=False)
    app._after_fork()
    settings.CELERY_TASK_ALWAYS_EAGER = False
    settings.CELERY_BROKER_URL = own_redis.url
    yield own_redis
    app.conf.update(saved)
    app._after_fork()


def test_the_reaper_sends_again_the_chunks_a_restarted_broker_lost(queued_on, tiny_settings, tmp_path):
    make_collection(tmp_path / "images", 12)
    tiny_settings.QUIRE_EMBED_CHUNK_SIZE = 5
    call_command("embed", "--detach")  # no worker: every chunk waits in Redis
    job = EmbeddingJob.objects.get()
    pending = job.chunks.filter(status=ChunkStatus.PENDING).count()
    broker = redis.Redis.from_url(queued_on.url)
    assert pending == 3 and broker.llen("embed") == pending
    assert jobs.requeue_lost_chunks() == []  # nothing lost: nothing sent twice

    queued_on.kill()  # Redis restarted without persistence: the queue and the mark are gone
    queued_on.start()
    assert broker.llen("embed") == 0
    assert jobs.requeue_lost_chunks() == [job.pk]
    assert broker.llen("embed") == pending  # each pending chunk once more
    assert jobs.requeue_lost_chunks() == []


def supervisord(conf: Path, env: dict) -> subprocess.Popen:
    return subprocess.Popen(
        [sys.executable, "-m", "supervisor.supervisord", "-c", str(conf), "--nodaemon"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip


def worker_pid(conf: Path, env: dict) -> int | None:
    said = subprocess.run(
        [sys.executable, "-m", "supervisor.supervisorctl", "-c", str(conf), "pid", "quire-worker"],
        env=env, capture_output=True, text=True, timeout=30,
    ).stdout.strip()  # fmt: skip
    return int(said) if said.isdigit() and said != "0" else None


def answering(app, timeout: float = 120) -> bool:
    """Whether a worker answers a ping within `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if app.control.ping(timeout=1.0):
                return True
        except Exception:  # the broker itself still away: ask again
            pass
        time.sleep(0.5)
    return False


def test_a_worker_comes_back_after_redis_restarts_and_after_it_dies(queued_on, tiny_settings, tmp_path):
    if not (ROOT / ".venv" / "bin" / "celery").exists() and not shutil.which("celery"):
        reason = "no .venv/bin/celery: deploy/supervisor/quire.conf runs the project's .venv"
        if REQUIRED:
            pytest.fail(reason)
        pytest.skip(reason)
    from quire.celery import app

    run = tmp_path / "supervisor"
    run.mkdir()
    conf = run / "supervisord.conf"
    conf.write_text(
        f"[supervisord]\nlogfile={run}/supervisord.log\npidfile={run}/supervisord.pid\n"
        f"[unix_http_server]\nfile={run}/supervisor.sock\n"
        "[rpcinterface:supervisor]\nsupervisor.rpcinterface_factory = supervisor.rpcinterface:make_main_rpcinterface\n"
        f"[supervisorctl]\nserverurl=unix://{run}/supervisor.sock\n"
        f"[include]\nfiles = {ROOT}/deploy/supervisor/quire.conf\n"
    )
    db = connection.settings_dict
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"
        if db["ENGINE"].endswith("postgresql")
        else "",
        "CELERY_BROKER_URL": queued_on.url,
        "QUIRE_DATA_DIR": str(tiny_settings.QUIRE_DATA_DIR),
    }
    supervisor = supervisord(conf, env)
    try:
        assert answering(app), "the supervised worker never answered"
        first = worker_pid(conf, env)
        assert first is not None

        queued_on.kill()  # Redis goes away under the running worker, and comes back empty
        time.sleep(3)
        queued_on.start()
        assert answering(app), "the worker did not come back after Redis restarted"

        os.kill(first, signal.SIGKILL)  # what kombu's AttributeError did: the worker gone for good
        deadline = time.monotonic() + 120
        while (again := worker_pid(conf, env)) in (None, first) and time.monotonic() < deadline:
            time.sleep(0.5)
        assert again not in (None, first), "supervisord did not start the worker again"
        assert answering(app), "the restarted worker did not answer"
    finally:
        supervisor.send_signal(signal.SIGTERM)
        try:
            supervisor.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(supervisor.pid, signal.SIGKILL)
            supervisor.wait()
