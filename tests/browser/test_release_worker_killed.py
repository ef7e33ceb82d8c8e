"""Issue 54 in a real Chromium: staff make a release from the page; its worker is killed with -9 half-way (a real
Celery worker on a real Redis, sharing the PostgreSQL test database; its steps slowed by QUIRE_TEST_SLOW_STEPS);
beat's reaper fails the job, the page says so with its sentence, and a new release of another name is made whole."""

import os
import re
import signal
from pathlib import Path

import pytest
from playwright.sync_api import expect

from annotator.labels import LabelChange, set_labels
from annotator.models import Release, ReleaseJob
from annotator.releases import publish as releases
from search.facade import search
from tests.browser.pages import log_in
from tests.search.test_celery_worker import wait_for

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.postgresql, pytest.mark.slow]


def test_a_release_whose_worker_is_killed_says_failed_and_the_next_one_is_made(
    page, live_server, labeling, sending_to_broker, start_worker, beat, tiny_settings, artifacts
):
    query = labeling["query"]
    top = [hit.image_id for hit in search(text=query.text, k=10)]
    changes = [LabelChange(image_id, "relevant" if n < 3 else "not_relevant") for n, image_id in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=labeling["annotator"], source="keyboard")
    worker = start_worker(QUIRE_TEST_SLOW_STEPS="4")  # room for the page's 2 s polls on a loaded CI machine
    log_in(page, live_server, "boss", "pw-boss-1", "/releases/")
    page.fill('input[name="name"]', "v1")
    page.click("#release-form button[type=submit]")
    row = page.locator("#release-jobs tr[data-job]").first
    expect(row.locator(".status")).to_have_text("running", timeout=60_000)
    # A step shown while the snapshot is still open (which of them the page's poll meets depends on the machine).
    expect(row).to_contain_text(re.compile(r"[1-4] / 5"), timeout=60_000)
    folder = Path(tiny_settings.QUIRE_DATA_DIR) / "releases"
    assert list(folder.glob(".v1.partial-*"))

    os.killpg(worker.pid, signal.SIGKILL)
    worker.wait(timeout=30)
    again = start_worker()  # as supervisord restarts it: beat's reaper runs there
    expect(row.locator(".status")).to_have_text("failed", timeout=90_000)  # the page polls every 2 s
    expect(row.locator(".error")).to_have_text(releases.STOPPED)
    page.screenshot(path=str(artifacts / "release-worker-killed.png"), full_page=True)
    assert not list(folder.glob(".v1.partial-*")) and not Release.objects.exists()

    page.fill('input[name="name"]', "v2")
    page.click("#release-form button[type=submit]")
    newest = page.locator("#release-jobs tr[data-job]").first
    expect(newest).to_contain_text("v2")
    expect(newest.locator(".status")).to_have_text("done", timeout=90_000)
    wait_for(lambda: Release.objects.filter(name="v2").exists(), again, "the release v2 recorded")
    page.reload()
    expect(page.locator('tr[data-release="v2"]')).to_be_visible()
    page.screenshot(path=str(artifacts / "release-after-a-killed-worker.png"), full_page=True)
    assert list(ReleaseJob.objects.order_by("pk").values_list("name", "status")) == [("v1", "failed"), ("v2", "done")]
