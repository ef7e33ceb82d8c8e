"""After the demo, every documented command works as its own process with no extra environment.

The guides' promise (README, docs/operations.md), run for real: `./dev demo --no-serve`, then `search`, `embed`,
the Milvus backend's `build_index` and `search`, and `runserver` as separate processes from the project root.
Only QUIRE_DATA_DIR is set (to keep the test's data apart from ./var), and QUIRE_VECTOR_BACKEND and
QUIRE_MILVUS_URI where the guides set them; DEBUG, SECRET_KEY, the model settings and HF_HUB_OFFLINE are not.
"""

import os
import subprocess
import sys
import urllib.request
from pathlib import Path

import pytest

from tests.servers import runserver

pytestmark = pytest.mark.slow  # each test runs a command or a kernel tool as its own process

ROOT = Path(__file__).resolve().parents[2]
SET_BY_TESTS = {"DEBUG", "SECRET_KEY", "DATABASE_URL", "CELERY_BROKER_URL", "HF_HUB_OFFLINE", "DJANGO_SETTINGS_MODULE"}


def environment(data_dir: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if k not in SET_BY_TESTS and not k.startswith("QUIRE_")}
    if "QUIRE_VENV" in os.environ:  # inside the docker image: ./dev uses the image's virtualenv
        env["QUIRE_VENV"] = os.environ["QUIRE_VENV"]
    return {**env, "QUIRE_DATA_DIR": str(data_dir)}


def manage(data_dir: Path, *arguments: str, timeout: int = 300, **settings: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "manage.py", *arguments],
        cwd=ROOT,
        env={**environment(data_dir), **settings},
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_a_missing_secret_key_is_one_clear_line(tmp_path):
    result = manage(tmp_path / "empty", "check")
    assert result.returncode == 1
    assert result.stderr.strip().splitlines() == [
        "manage.py: SECRET_KEY is not set. Set SECRET_KEY to a long random string, or set DEBUG=1 for local "
        "development (or run ./dev demo, whose data directory records both)."
    ]


def test_the_demo_then_search_embed_and_runserver_as_separate_processes(tmp_path):
    data = tmp_path / "demo-data"
    built = subprocess.run(
        ["./dev", "demo", "--no-serve", "--images", "60"],
        cwd=ROOT,
        env=environment(data),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert built.returncode == 0, built.stderr
    assert "The demo is ready" in built.stdout

    found = manage(data, "search", "flamingo standing on one leg", "-k", "5", "--json")
    assert found.returncode == 0, found.stderr
    assert len(found.stdout.strip().splitlines()) == 5
    assert "random weights" in found.stderr  # the demo's stand-in model, and it says so

    embedded = manage(data, "embed")
    assert embedded.returncode == 0, embedded.stderr
    assert "Nothing to embed" in embedded.stdout

    assert "Fitted a new map: 60 images" in built.stdout  # the demo computed its map
    mapped = manage(data, "map_layout")  # the operations guide's command, after the demo: nothing new to place
    assert mapped.returncode == 0, mapped.stderr
    assert "Placed 0 new images on the map: 60 images" in mapped.stdout

    # The operations guide's Milvus lines: load the demo's store into a Milvus Lite file, then search it.
    on_milvus = {"QUIRE_VECTOR_BACKEND": "milvus", "QUIRE_MILVUS_URI": str(data / "vectors.db")}
    loaded = manage(data, "build_index", "--backend", "milvus", **on_milvus)
    assert loaded.returncode == 0, loaded.stderr
    assert "Loaded +60 -0, all indexed: the FLAT collection holds 60 vectors" in loaded.stdout
    by_milvus = manage(data, "search", "flamingo standing on one leg", "-k", "5", "--json", **on_milvus)
    assert by_milvus.returncode == 0, by_milvus.stderr
    assert by_milvus.stdout == found.stdout  # FAISS flat's ranking

    # A second run reuses everything; --team adds a team to try, --addrport is where it says it serves.
    again = manage(data, "demo", "--no-serve", "--images", "60", "--team", "--addrport", "9123")
    assert again.returncode == 0, again.stderr
    assert "  adjudicator  adjudicator: decides where the two disagree" in again.stdout
    assert (
        "Serve it with `./dev demo --addrport 9123`" in again.stdout
        and "http://127.0.0.1:9123/queries/" in again.stdout
    )
    assert "8000" not in again.stdout
    refused = manage(data, "demo", "--no-serve", "--addrport", "localhost:http")
    assert refused.returncode == 1 and "--addrport is a port (9000) or HOST:PORT" in refused.stderr

    server, port = runserver(environment(data))
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/static/css/quire.css", timeout=5) as css:
            assert css.status == 200 and b".tile" in css.read()
    finally:
        server.terminate()
        server.wait(timeout=20)
