import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotator.models import Query
from tests.search.conftest import make_collection


@pytest.fixture
def labeling(tiny_settings, tmp_path):
    """A collection of 120 embedded and indexed images, a query, an annotator and an admin."""
    make_collection(tmp_path / "images", 120)
    call_command("embed")
    query = Query.objects.create(text="Black Skimmer performing skimming", supercategory="Birds", category="Feeding")
    User = get_user_model()
    annotator = User.objects.create_user("ann", password="pw-ann-1")
    admin = User.objects.create_superuser("boss", "boss@example.org", "pw-boss-1")
    return {"query": query, "annotator": annotator, "admin": admin, "images": tmp_path / "images"}


import os  # noqa: E402
import shutil  # noqa: E402
from pathlib import Path  # noqa: E402

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
        "args": ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic"],
    }  # fmt: skip


@pytest.fixture
def artifacts() -> Path:
    """Where browser tests leave screenshots and downloads for people to look at."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
