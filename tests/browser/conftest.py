import os
import shutil
from pathlib import Path

import pytest

# Playwright's sync API runs an event loop in the test thread; Django's ORM calls from the
# test (checking what the browser saved) are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

CHROMIUM = os.environ.get("QUIRE_CHROMIUM", "/usr/bin/chromium")
ARTIFACTS = Path(__file__).resolve().parents[2] / "test-artifacts"


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args):
    if not shutil.which(CHROMIUM):
        reason = f"no Chromium at {CHROMIUM} (apt-get install chromium)"
        if os.environ.get("QUIRE_REQUIRE_SERVICES") == "1":
            pytest.fail(f"{reason}; QUIRE_REQUIRE_SERVICES=1: CI must run the browser tests")
        pytest.skip(reason)
    return {
        **browser_type_launch_args,
        "executable_path": CHROMIUM,
        "args": [
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--enable-unsafe-swiftshader",  # WebGL in software: the map (static/js/labeling/map-view.js)
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--no-first-run",
            "--disable-quic",
        ],
    }


@pytest.fixture
def artifacts() -> Path:
    """Where browser tests leave screenshots and downloads for people to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS


# A real Celery worker and beat for the browser tests that run a job on one (test_release_worker_killed.py).
from tests.search.test_celery_worker import beat, broker, sending_to_broker, start_worker  # noqa: E402, F401
