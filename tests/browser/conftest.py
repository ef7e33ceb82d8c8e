import os
import shutil
from pathlib import Path

import pytest
from playwright.sync_api import expect

# Playwright's sync API runs an event loop in the test thread; Django's ORM calls from the
# test (checking what the browser saved) are still plain synchronous calls.
os.environ.setdefault("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

# How long an `expect` waits for the page to come to what it asserts (Playwright's default: 5 s). CI runs a test
# process per core and one more beside the docker smoke test's image builds on two cores; there a save's answer
# test_the_grid_at_laptop_and_desktop_sizes failed once, having passed in every run before; the record kept no
# traceback, and its waits for the save and the side pane are the steps a loaded machine slows. A bound on
# waiting, not a timed assertion: a page that never gets there still fails, 15 s later.
expect.set_options(timeout=15_000)

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
