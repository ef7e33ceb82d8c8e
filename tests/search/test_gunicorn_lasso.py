"""A lasso of the most vertices the API takes reaches Django through gunicorn with the project's settings
(quire/gunicorn_hooks.py), where gunicorn's default request line (4,094 bytes) answered 414 with its own page
from about 180 short vertices (issue 54). Real processes: gunicorn serving quire.wsgi on a loopback port, stopped
by its PID."""

import math
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from urllib.parse import quote

import pytest

from search.polygon import MAX_VERTICES

pytestmark = pytest.mark.slow
ROOT = Path(__file__).resolve().parents[2]


def lasso(vertices: int) -> str:
    """A convex polygon of `vertices` full-precision vertices, as long as a script could send it."""
    points = [(99.123456789 * math.cos(a), -99.123456789 * math.sin(a)) for a in
              (2 * math.pi * k / vertices for k in range(vertices))]  # fmt: skip
    return ",".join(f"{x:.9f},{y:.9f}" for x, y in points)


@pytest.fixture
def gunicorn(tmp_path):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    env = {
        **{k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")},
        "DJANGO_SETTINGS_MODULE": "tests.settings", "QUIRE_DATA_DIR": str(tmp_path), "QUIRE_WARM_UP": "0",
    }  # fmt: skip
    migrated = subprocess.run([sys.executable, "manage.py", "migrate", "-v", "0"], cwd=ROOT, env=env, timeout=300)
    assert migrated.returncode == 0
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "quire.wsgi", "--config", "python:quire.gunicorn_hooks", "-w", "1",
         "-b", f"127.0.0.1:{port}"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True,
    )  # fmt: skip
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(f"{base}/healthz", timeout=5)
            break
        except urllib.error.HTTPError:
            break  # answered: a 503 without a broker is an answer
        except OSError:
            assert process.poll() is None and time.monotonic() < deadline, "gunicorn did not start"
            time.sleep(0.3)
    yield base
    process.terminate()
    process.wait(timeout=30)


def answer(url: str) -> tuple[int, str, str]:
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.headers.get("Content-Type", ""), response.read().decode()
    except urllib.error.HTTPError as error:
        return error.code, error.headers.get("Content-Type", ""), error.read().decode()


def test_the_largest_lasso_the_api_takes_reaches_django_under_gunicorn(gunicorn):
    text = lasso(MAX_VERTICES)
    url = f"{gunicorn}/api/queries/1/candidates/?strategy=feedback&k=1000&within={quote(text)}"
    assert len(url) > 4094  # what gunicorn's default line (4,094 bytes) refused
    status, kind, body = answer(url)
    assert status != 414 and kind.startswith("application/json"), (status, body[:200])  # Django's answer
    assert status in (401, 403)  # it asks who is calling: the request reached the API
    # Past the line gunicorn takes, its own 414: the API's limit sits inside it.
    status, _, _ = answer(f"{gunicorn}/api/queries/1/candidates/?within={quote(lasso(MAX_VERTICES * 2))}")
    assert status == 414
