# ruff: noqa: F811  (pytest fixtures imported from the embedding worker tests are parameters here)
"""A rerank job on a real Celery worker listening to the `models` queue, with a real Redis broker and the
real chat server: routed there, and resumed without asking again when its pool process is killed."""

import os
import signal
import subprocess
import time
from collections import Counter

import pytest

from annotator.methods.rerank import start_job
from annotator.models import RerankJob, RerankScore
from lmm.models import Answer
from tests.lmm.server import model_answer
from tests.search.test_celery_worker import broker, sending_to_broker, start_worker, wait_for  # noqa: F401

# The worker process shares the test database, which must be PostgreSQL (a file, not SQLite's memory).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql, pytest.mark.slow]


def slow_model(chat_server, settings) -> dict:
    """The chat server answers as a model does, slowly enough for a kill to land mid-job (a request the kill cut
    off arrives without its body); this process's settings point at it. Returns a worker's environment for it."""

    def slow(request):
        if "messages" not in request:
            return 400, {"error": {"message": "incomplete request"}}, {}
        time.sleep(0.15)
        return model_answer(request)

    chat_server.answer = slow
    settings.QUIRE_LMM_BASE_URL, settings.QUIRE_LMM_MODEL = chat_server.base_url, "tiny-vlm"
    return {"QUIRE_LMM_BASE_URL": chat_server.base_url, "QUIRE_LMM_MODEL": "tiny-vlm", "QUIRE_LMM_MAX_RETRIES": "0"}


def test_a_rerank_on_the_models_queue_survives_its_pool_process_being_killed(
    labeling,
    chat_server,
    sending_to_broker,
    start_worker,
    settings,
):
    model_env = slow_model(chat_server, settings)
    celery_only = start_worker(pool="solo")  # the default queue's worker must not take model work
    worker = start_worker(pool="prefork", queues="models", **model_env)
    job = start_job(labeling["query"], top=60)
    wait_for(lambda: Answer.objects.count() >= 12, worker, "the first answers")
    children = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True).stdout.split()
    assert children, "the prefork worker has a pool process"
    for pid in children:
        os.kill(int(pid), signal.SIGKILL)
    wait_for(lambda: RerankJob.objects.get(pk=job.pk).status in ("done", "failed"), worker, "the job finishing")
    job.refresh_from_db()
    assert job.status == "done", job.error
    assert RerankScore.objects.filter(query=labeling["query"]).count() == 60
    # Asked again after the kill: only images whose answer was not stored yet, that is those in flight or
    # answered but not yet written when the process died (QUIRE_LMM_CONCURRENCY = 4 at a time); never the
    # whole top 60 again. (A request cut off by the kill may reach the server without its body.)
    asked = Counter(r["messages"][0]["content"][1]["image_url"]["url"] for r in chat_server.requests if "messages" in r)
    assert len(asked) == 60 and sum(n - 1 for n in asked.values()) <= 2 * 4
    assert 0 < job.asked < 60
    assert "annotator.rerank[" not in celery_only.log_path.read_text()  # never received (the banner lists it)


def test_a_rerank_whose_whole_worker_was_killed_is_queued_again_and_finishes_on_a_new_worker(
    labeling,
    chat_server,
    sending_to_broker,
    start_worker,
    settings,
):
    """Issue 27: a killed worker (not only its pool process) left its job "running" until the broker's
    visibility timeout (3 hours). Its heartbeat goes stale; the reaper (Celery beat, every minute) queues it
    again, and a new worker finishes it from the answers already cached."""
    from annotator.methods.rerank import requeue_stale_jobs

    model_env = slow_model(chat_server, settings)
    first = start_worker(pool="solo", queues="models", **model_env)
    job = start_job(labeling["query"], top=60)
    wait_for(lambda: Answer.objects.count() >= 8, first, "the first answers")
    os.killpg(first.pid, signal.SIGKILL)  # the whole worker, as a lost machine
    first.wait()
    cached = Answer.objects.count()  # what the first worker stored before it died
    asked_before = sum("messages" in r for r in chat_server.requests)
    assert RerankJob.objects.get(pk=job.pk).status == "running"
    assert requeue_stale_jobs(stale_seconds=3600) == [], "a fresh heartbeat is not stale"
    time.sleep(1.5)
    second = start_worker(pool="solo", queues="models", **model_env)
    assert requeue_stale_jobs(stale_seconds=1) == [job.pk]
    wait_for(lambda: RerankJob.objects.get(pk=job.pk).status in ("done", "failed"), second, "the job finishing")
    job.refresh_from_db()
    assert job.status == "done", job.error
    assert RerankScore.objects.filter(query=labeling["query"]).count() == 60
    asked = Counter(r["messages"][0]["content"][1]["image_url"]["url"] for r in chat_server.requests if "messages" in r)
    assert len(asked) == 60
    # Resumed, not started over: the new worker asked exactly what the cache lacked. (Which answers were in
    # flight when the kill landed depends on timing: the old bound "at most 4 asked twice" failed once in CI
    # with 5, answers received but not yet stored; this count does not depend on when the kill lands.)
    assert sum(asked.values()) - asked_before == 60 - cached and cached >= 8
