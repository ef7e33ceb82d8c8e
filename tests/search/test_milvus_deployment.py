"""Quire's processes on one Milvus server (issue 43), as a deployment runs them: gunicorn's web workers search
through the API while `manage.py build_index --backend milvus` loads an embedding job's new images and
`manage.py search` ranks, all at once, each its own process; then the server dies under them: a 503 with a
sentence from the web workers, exit 1 from the command. Milvus Lite serves one
process per file; a server has no such rule (docs/vector-backends.md)."""

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from pymilvus import MilvusClient
from rest_framework.authtoken.models import Token

from bench import milvus_server
from search import engine, milvus
from tests.factories import make_collection

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]
ROOT = Path(__file__).resolve().parents[2]


def database_url() -> str:
    """The test database, for processes of their own."""
    db = connection.settings_dict
    if db["ENGINE"].endswith("sqlite3"):
        return f"sqlite:///{db['NAME']}"
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT'] or 5432}/{db['NAME']}"


@pytest.fixture
def own_server(tmp_path):
    """A Milvus server of this test's own, which it may kill."""
    folder = tmp_path / "milvus"
    folder.mkdir()
    try:
        server, process = milvus_server.started(folder, next_target_every=1)  # as conftest's server
    except milvus_server.ServerUnavailable as error:
        pytest.fail(f"the test's own Milvus server did not start: {error}")
    yield server, process
    milvus_server.stop(process, grace=3)  # its data is thrown away


@pytest.fixture
def deployment(labeling, tiny_settings, own_server):
    server, _ = own_server
    tiny_settings.QUIRE_VECTOR_BACKEND, tiny_settings.QUIRE_MILVUS_URI = "milvus", server.uri
    call_command("build_index", "--backend", "milvus")  # the 120 images, before the web server starts
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "tests.settings",
        "DATABASE_URL": database_url(),
        "QUIRE_DATA_DIR": str(tiny_settings.QUIRE_DATA_DIR),
        "QUIRE_CLIP_PRETRAINED": str(tiny_settings.QUIRE_CLIP_PRETRAINED),
        "QUIRE_VECTOR_BACKEND": "milvus",
        "QUIRE_MILVUS_URI": server.uri,
        "QUIRE_MILVUS_TIMEOUT": "5",
        "HF_HUB_OFFLINE": "1",
    }
    log = (tiny_settings.QUIRE_DATA_DIR / "gunicorn.log").open("w")  # a file: a pipe nobody reads would fill and block
    # Port 0: the kernel gives gunicorn a free port as it binds, read back from its log. A port probed free first may
    # be taken by another test process's server before gunicorn binds it.
    web = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "quire.wsgi", "--workers", "3", "--threads", "2",
         "--bind", "127.0.0.1:0", "--config", "python:quire.gunicorn_hooks", "--graceful-timeout", "5"],
        cwd=ROOT, env=environment, stdout=log, stderr=subprocess.STDOUT,
    )  # fmt: skip
    web.log_path = log.name
    port = listening_port(web)
    token = Token.objects.create(user=labeling["annotator"]).key
    url = f"http://127.0.0.1:{port}/api/queries/{labeling['query'].pk}/candidates/?k=200"
    yield {"web": web, "url": url, "token": token, "environment": environment, "settings": tiny_settings}
    web.send_signal(signal.SIGTERM)
    web.wait(timeout=60)
    log.close()
    engine.forget()


def listening_port(web: subprocess.Popen) -> int:
    """The port gunicorn bound (its log's "Listening at: http://127.0.0.1:PORT")."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        said = Path(web.log_path).read_text()
        if found := re.search(r"Listening at: http://127\.0\.0\.1:(\d+)", said):
            return int(found.group(1))
        if web.poll() is not None:
            pytest.fail(f"gunicorn exited: {said[-2000:]}")
        time.sleep(0.2)
    web.kill()  # the fixture's teardown does not run for a set-up that fails
    web.wait(timeout=30)
    pytest.fail(f"gunicorn did not bind a port within a minute: {Path(web.log_path).read_text()[-2000:]}")


def ask(deployment) -> tuple[int, dict]:
    request = urllib.request.Request(deployment["url"], headers={"Authorization": f"Token {deployment['token']}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status, json.loads(answer.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"{}")


def wait_for_web(deployment, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if deployment["web"].poll() is not None:
            pytest.fail(f"gunicorn exited: {Path(deployment['web'].log_path).read_text()[-2000:]}")
        try:
            if ask(deployment)[0] == 200:
                return
        except OSError:
            pass
        time.sleep(0.5)
    pytest.fail("gunicorn did not answer within two minutes")


def manage(deployment, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args], cwd=ROOT, env=deployment["environment"], capture_output=True,
        text=True, timeout=300,
    )  # fmt: skip


def ids_of(answer: dict) -> set[int]:
    return {row["image_id"] for row in answer["results"]}


def test_web_workers_search_while_a_command_loads_then_the_server_dies(deployment, labeling, own_server):
    wait_for_web(deployment)
    assert ids_of(ask(deployment)[1]) == set(range(1, 121))

    # An embedding job's new images, embedded here into the store (the FAISS backend for this process's own build,
    # so that the load into Milvus is the command's, below).
    settings = deployment["settings"]
    settings.QUIRE_VECTOR_BACKEND = "faiss"
    make_collection(labeling["images"], 40, first_id=121)
    call_command("embed")
    settings.QUIRE_VECTOR_BACKEND = "milvus"

    answers: list[tuple[int, set[int]]] = []
    loading = threading.Event()

    def web_traffic():
        while not loading.is_set() or len(answers) < 6:
            status, body = ask(deployment)
            answers.append((status, ids_of(body) if status == 200 else body))

    traffic = threading.Thread(target=web_traffic)
    traffic.start()
    searcher = subprocess.Popen(
        [sys.executable, "-c", "import subprocess, sys\nfor _ in range(3):\n"
         "    done = subprocess.run([sys.executable, 'manage.py', 'search', 'a bird', '-k', '200', '--json'],"
         " capture_output=True, text=True)\n    print(done.returncode, len(done.stdout.splitlines()), flush=True)"],
        cwd=ROOT, env=deployment["environment"], stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    loaded = manage(deployment, "build_index", "--backend", "milvus")
    loading.set()
    traffic.join(timeout=120)
    searched = searcher.communicate(timeout=300)[0].split()

    assert loaded.returncode == 0, loaded.stderr
    assert "Loaded +40 -0, all indexed: the FLAT collection holds 160 vectors" in loaded.stdout
    assert searched[0::2] == ["0", "0", "0"]  # each `manage.py search` answered, with 120 or 160 images
    assert set(searched[1::2]) <= {"120", "160"}
    assert answers and all(status == 200 for status, _ in answers), [a for a in answers if a[0] != 200][:3]
    assert all(set(range(1, 121)) <= ids <= set(range(1, 161)) for _, ids in answers)
    # Once the command has returned, every web worker's next search has the new images: nothing was reloaded.
    for _ in range(8):
        status, body = ask(deployment)
        assert status == 200 and ids_of(body) == set(range(1, 161))
    assert sorted(milvus.held_ids(engine.configured_spec().name).tolist()) == list(range(1, 161))  # once each

    # The collection is dropped under the running web workers (an operator, another deployment's --rebuild): a 503
    # with a sentence, never a 500, until build_index loads it again; then they answer as before.
    server, process = own_server
    client = MilvusClient(uri=server.uri, timeout=30)
    client.drop_collection(milvus.collection_name(engine.configured_spec().name))
    client.close()
    said = []
    for _ in range(30):  # each worker meets the drop once ("failed to answer"), then says that nothing is loaded
        status, body = ask(deployment)
        assert status == 503 and "vector database at QUIRE_MILVUS_URI=" in body["detail"], body
        said.append(body["detail"])
    assert any("Nothing is loaded into the vector database" in sentence for sentence in said)
    reloaded = manage(deployment, "build_index", "--backend", "milvus")
    assert reloaded.returncode == 0 and "Loaded +160 -0, all indexed" in reloaded.stdout, reloaded.stderr
    for _ in range(6):
        status, body = ask(deployment)
        assert status == 200 and ids_of(body) == set(range(1, 161))

    # Then the server dies under them (one test, not two: each starts a server, a web server and a collection).
    os.kill(process.pid, signal.SIGKILL)  # the server dies: a crash, an out-of-memory kill
    process.wait()
    status, body = ask(deployment)
    assert status == 503 and "The vector database at QUIRE_MILVUS_URI=" in body["detail"], body
    searched = manage(deployment, "search", "a bird")
    assert searched.returncode == 1 and "Traceback" not in searched.stderr
    assert "CommandError: The vector database at QUIRE_MILVUS_URI=" in searched.stderr.strip().splitlines()[-1]
    assert deployment["web"].poll() is None  # gunicorn's workers are still up, and answer the next request
    assert ask(deployment)[0] == 503
