"""The embedding job through a real Celery worker process on a real Redis broker.

The worker is a separate `celery -A quire worker` process sharing the test
database (PostgreSQL: SQLite test databases live in memory) and the data
directory, as workers on other machines share them in production. In CI
(QUIRE_REQUIRE_SERVICES=1) a missing Redis or PostgreSQL fails instead of skipping.
"""

import os
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
import redis
from django.core.management import CommandError, call_command
from django.db import connection

from search import layout
from search.facade import search
from search.jobs import live_workers
from search.models import EmbeddingFailure, EmbeddingJob, IndexBuild, JobStatus, MapLayout
from tests.factories import make_collection

# The worker process shares the test database, which must be PostgreSQL (a file, not SQLite's memory).
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql, pytest.mark.slow]

# A database of its own per test worker (pytest-xdist's gw0, gw1, ...: 15, 14, ...): a Celery worker started by one
# must never take a task another worker's test queued, against the other's test database.
_WORKER = int(os.environ.get("PYTEST_XDIST_WORKER", "gw0").removeprefix("gw") or 0)
REDIS_URL = os.environ.get("QUIRE_TEST_REDIS_URL", f"redis://127.0.0.1:6379/{15 - _WORKER % 16}")
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
def worker(start_worker):
    process = start_worker()
    yield process
    stop(process)


@pytest.fixture
def start_worker(broker, tiny_settings, tmp_path):
    """Start `celery -A quire worker` processes (each in its own process group); stops any left at the end."""
    started = []

    def start(pool="solo", queues="celery,embed", **extra_env):
        log_path = tmp_path / f"worker-{len(started)}.log"
        process = _start_worker(broker, tiny_settings, log_path, pool, extra_env, queues)
        started.append(process)
        return process

    yield start
    for process in started:
        stop(process)


def stop(process):
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()


def _environment(broker, tiny_settings):
    """What a worker or beat started by a test runs with: the test database, the test's broker and data."""
    db = connection.settings_dict
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}",
        "CELERY_BROKER_URL": broker,
        "QUIRE_DATA_DIR": str(tiny_settings.QUIRE_DATA_DIR),
        "QUIRE_CLIP_PRETRAINED": tiny_settings.QUIRE_CLIP_PRETRAINED,
    }


REAP_SECONDS = 2  # beat's reapers in the tests that start it (QUIRE_REAP_SECONDS: 60 in a deployment)


@pytest.fixture
def beat(broker, tiny_settings, tmp_path):
    """`celery -A quire beat`, its reapers every REAP_SECONDS; stopped by its PID at the end."""
    env = {**_environment(broker, tiny_settings), "QUIRE_REAP_SECONDS": str(REAP_SECONDS)}
    log = (tmp_path / "beat.log").open("wb")
    process = subprocess.Popen(
        [sys.executable, "-m", "celery", "-A", "quire", "beat", "--loglevel", "info",
         "--schedule", str(tmp_path / f"beat-{uuid.uuid4().hex[:6]}")],
        cwd=Path(__file__).resolve().parents[2], env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
    )  # fmt: skip
    process.log_path = tmp_path / "beat.log"
    yield process
    stop(process)
    log.close()


def _start_worker(broker, tiny_settings, log_path, pool, extra_env, queues):
    env = {**_environment(broker, tiny_settings), "QUIRE_EMBED_BATCH_SIZE": "4", **extra_env}
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
                pool,
                "--concurrency",
                "1",
                "--loglevel",
                "info",
                "--without-gossip",
                "--without-mingle",
                "--queues",
                queues,
                "--hostname",
                f"test-{uuid.uuid4().hex[:8]}@%h",
            ],
            cwd=Path(__file__).resolve().parents[2],
            env=env,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # its own process group: a test can kill it and its pool at once
        )
    process.log_path = log_path
    return process


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

    # The map's layout through the worker too: the command waits for the worker and reports what it did.
    call_command("map_layout")
    assert "Fitted a new map: 16 images" in capsys.readouterr().out
    layout_job = MapLayout.objects.get()
    assert layout_job.status == JobStatus.DONE and layout.load(layout_job.model_name).image_ids.tolist() == sorted(
        set(range(1, 15)) - {6} | {50, 51, 52}
    )


def test_a_worker_loads_the_collection_into_milvus_and_the_web_process_searches_it(
    sending_to_broker, start_worker, tiny_settings, tmp_path, capsys
):
    """QUIRE_VECTOR_BACKEND=milvus with a Milvus Lite file: the worker embeds, its index build loads the vectors
    into the collection and lets go of the file, and this process (the web server's part) then searches it."""
    from search import engine, milvus

    uri = str(tmp_path / "vectors.db")
    tiny_settings.QUIRE_VECTOR_BACKEND, tiny_settings.QUIRE_MILVUS_URI = "milvus", uri
    worker = start_worker(QUIRE_VECTOR_BACKEND="milvus", QUIRE_MILVUS_URI=uri)
    try:
        make_collection(tmp_path / "images", 14)
        call_command("embed", "--detach")
        wait_for(lambda: IndexBuild.objects.filter(status=JobStatus.DONE).exists(), worker, "embedding and load")
        build = IndexBuild.objects.get()
        assert (build.backend, build.mode, build.vectors, build.done, build.total) == (
            "milvus",
            "loaded +14 -0, all indexed",
            14,
            14,
            14,
        )
        hits = search(image_id=3, k=14)
        assert hits[0].image_id == 3 and {hit.image_id for hit in hits} == set(range(1, 15))
        engine.forget()  # the web process closes its collection: the worker may open the file again

        call_command("build_index", "--backend", "milvus")  # through the worker; the command follows it
        assert "Loaded +0 -0, all indexed: the FLAT collection holds 14 vectors" in capsys.readouterr().out
        assert sorted(milvus.held_ids(engine.configured_spec().name).tolist()) == list(range(1, 15))
    finally:
        engine.forget()


# --- killed workers (finding 8 of the security audit) -------------------------------------------------


@pytest.fixture(scope="module")
def big_png(tmp_path_factory):
    """A 5,000 x 5,000 noise PNG (about a second to decode): a chunk of them lasts long enough to be killed."""
    import numpy as np
    from PIL import Image as PILImage

    path = tmp_path_factory.mktemp("big") / "big.png"
    pixels = np.random.default_rng(0).integers(0, 256, size=(5000, 5000, 3), dtype=np.uint8)
    PILImage.fromarray(pixels).save(path, compress_level=1)
    return path


def slow_collection(folder, big_png):
    """Ten small images (chunks 0 and 1) and five big ones (chunk 2, the one to kill)."""
    from catalog.models import Image, ImageRoot

    make_collection(folder, 10)
    root = ImageRoot.objects.get()
    for image_id in range(11, 16):
        os.link(big_png, folder / f"big-{image_id}.png")
        Image.objects.create(id=image_id, root=root, file_name=f"big-{image_id}.png", taxon_id=10)


def running_chunk(number):
    from search.models import EmbeddingChunk

    return EmbeddingChunk.objects.filter(number=number, status="running").exists()


def embedded_once_and_searchable(job):
    from search.spec import store_root
    from search.store import EmbeddingStore

    job.refresh_from_db()
    assert (job.status, job.done, job.failed) == (JobStatus.DONE, 15, 0)
    ids = EmbeddingStore.existing(store_root(), job.model_name).load().image_ids
    assert sorted(ids) == list(range(1, 16))  # every image once
    assert {hit.image_id for hit in search(image_id=3, k=15)} == set(range(1, 16))  # the index agrees


def test_a_killed_pool_process_gives_its_chunk_back(sending_to_broker, start_worker, tmp_path, big_png, capsys):
    slow_collection(tmp_path / "images", big_png)
    worker = start_worker(pool="prefork")
    call_command("embed", "--detach")
    job = EmbeddingJob.objects.get()
    wait_for(lambda: running_chunk(2), worker, "chunk 2 starting")
    children = subprocess.run(["pgrep", "-P", str(worker.pid)], capture_output=True, text=True).stdout.split()
    assert children, "the prefork worker has a pool process"
    for pid in children:
        os.kill(int(pid), signal.SIGKILL)
    wait_for(lambda: IndexBuild.objects.filter(status=JobStatus.DONE).exists(), worker, "the job finishing")
    assert job.chunks.get(number=2).attempts == 2  # run again after the kill, not left "running"
    embedded_once_and_searchable(job)


def test_a_killed_worker_recovers_and_embed_never_waits_forever(
    sending_to_broker, start_worker, tmp_path, big_png, tiny_settings
):
    tiny_settings.QUIRE_CHUNK_STALE_SECONDS = 4
    tiny_settings.QUIRE_EMBED_STALL_SECONDS = 8
    slow_collection(tmp_path / "images", big_png)
    first = start_worker(QUIRE_CHUNK_STALE_SECONDS="4")
    call_command("embed", "--detach")
    job = EmbeddingJob.objects.get()
    wait_for(lambda: running_chunk(2), first, "chunk 2 starting")
    os.killpg(first.pid, signal.SIGKILL)  # the whole worker, as a lost machine
    first.wait()

    # No worker at all: `embed` queues the dead chunk again, then says plainly that nobody works.
    started = time.monotonic()
    with pytest.raises(CommandError, match="no Celery worker answers: start one with `celery -A quire worker`"):
        call_command("embed")
    assert time.monotonic() - started < 60
    assert job.chunks.get(number=2).status == "pending"

    second = start_worker(QUIRE_CHUNK_STALE_SECONDS="4")
    # On a loaded machine a worker can take longer than the 8 s stall window to start: wait until it
    # answers, and give the follow-up the default window (the stall itself was checked above).
    wait_for(lambda: live_workers(), second, "the restarted worker answering a ping")
    tiny_settings.QUIRE_EMBED_STALL_SECONDS = 120
    call_command("embed")  # follows the restarted worker to the end
    wait_for(lambda: IndexBuild.objects.filter(status=JobStatus.DONE).exists(), second, "the index build")
    assert job.chunks.get(number=2).attempts == 2
    embedded_once_and_searchable(job)


def test_a_worker_loads_into_a_milvus_server_while_this_process_searches_it(
    sending_to_broker, start_worker, tiny_settings, tmp_path, milvus_server_uri
):
    """On a Milvus server nothing is held per process: this process (the web server's part) keeps its collection
    open while the worker embeds new images and loads them, and its next search has them."""
    from search import engine

    tiny_settings.QUIRE_VECTOR_BACKEND = "milvus"
    worker = start_worker(QUIRE_VECTOR_BACKEND="milvus", QUIRE_MILVUS_URI=milvus_server_uri)
    try:
        make_collection(tmp_path / "images", 14)
        call_command("embed", "--detach")
        wait_for(lambda: IndexBuild.objects.filter(status=JobStatus.DONE).count() == 1, worker, "embedding and load")
        assert {hit.image_id for hit in search(image_id=3, k=30)} == set(range(1, 15))

        make_collection(tmp_path / "images", 6, first_id=15)  # an import's new images, while this process searches
        call_command("embed", "--detach")
        wait_for(lambda: IndexBuild.objects.filter(status=JobStatus.DONE).count() == 2, worker, "the second load")
        assert IndexBuild.objects.order_by("-pk").first().mode == "loaded +6 -0, all indexed"
        assert {hit.image_id for hit in search(image_id=3, k=30)} == set(range(1, 21))  # the same open collection
    finally:
        engine.forget()


@pytest.mark.parametrize("pool, in_processes", [("threads", True), ("prefork", False)])
def test_the_gpu_workers_configuration_decodes_in_processes(
    sending_to_broker, start_worker, tmp_path, capsys, pool, in_processes
):
    """docker/compose.gpu.yml's worker (--pool threads, QUIRE_EMBED_LOADER_PROCESSES) embeds with decoding
    processes; a prefork worker given the setting decodes in threads and says why. Either way every image is
    embedded or failed with its reason."""
    worker = start_worker(pool=pool, QUIRE_EMBED_LOADER_PROCESSES="2")
    make_collection(tmp_path / "images", 10, broken={4: "corrupt"})
    call_command("embed", "--detach")
    wait_for(lambda: IndexBuild.objects.filter(status=JobStatus.DONE).exists(), worker, "embedding and index build")
    job = EmbeddingJob.objects.get()
    assert (job.status, job.done, job.failed) == (JobStatus.DONE, 9, 1)
    assert search(image_id=3, k=3)[0].image_id == 3
    log = worker.log_path.read_text()
    assert ("decoding 5 images in 2 processes" in log) is in_processes
    assert ("this worker is a daemon process (Celery's prefork pool)" in log) is not in_processes
