"""Issue 40 in a real Chromium: staff make a release from the releases page, watch its job finish, download its card
and compare two releases."""

import pytest
from playwright.sync_api import expect

from annotator.labels import LabelChange, set_labels
from annotator.models import Release
from annotator.releases import publish as releases
from search.facade import search
from tests.browser.pages import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_staff_make_a_release_and_compare_two(page, live_server, labeling, artifacts, settings, tmp_path):
    settings.QUIRE_DATA_DIR = tmp_path / "data"
    query, ann = labeling["query"], labeling["annotator"]
    top = [hit.image_id for hit in search(text=query.text, k=10)]
    changes = [LabelChange(image_id, "relevant" if n < 3 else "not_relevant") for n, image_id in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    log_in(page, live_server, "boss", "pw-boss-1", "/releases/")
    expect(page.locator("#releases")).to_contain_text("No release yet.")
    page.fill('input[name="name"]', "v1.0")
    page.fill('textarea[name="notes"]', "The first public version.")
    page.click("#release-form button[type=submit]")
    expect(page.locator("#release-jobs tr[data-job] .status")).to_have_text("done", timeout=60_000)
    page.reload()
    row = page.locator('tr[data-release="v1.0"]')
    expect(row).to_contain_text("The first public version.")
    with page.expect_download() as download:
        row.get_by_label("download README.md").click()
    assert download.value.suggested_filename == "v1.0-README.md"
    row.get_by_role("link", name="README.md", exact=True).click()  # issue 64: the card is read on the page
    expect(page.locator("#release-card h1").first).to_be_visible()
    expect(page.locator("#release-card")).to_contain_text("license: other")
    page.screenshot(path=str(artifacts / "release-card.png"))
    page.go_back()
    row.get_by_role("link", name="croissant.json", exact=True).click()
    expect(page.locator("body")).to_contain_text('"@type": "sc:Dataset"')
    page.go_back()
    set_labels(query_id=query.pk, changes=[LabelChange(top[3], "relevant")], user=ann, source="keyboard")
    releases.create("v1.1")
    page.reload()
    page.select_option('#diff-form select[name="from"]', "v1.0")
    page.select_option('#diff-form select[name="to"]', "v1.1")
    page.click("#diff-form button")
    expect(page.locator("#release-diff")).to_contain_text("1 final labels changed")
    page.screenshot(path=str(artifacts / "releases.png"), full_page=True)
    assert list(Release.objects.order_by("name").values_list("name", flat=True)) == ["v1.0", "v1.1"]
    page.fill('input[name="name"]', "v1.0")
    page.click("#release-form button[type=submit]")
    expect(page.locator("#release-error")).to_contain_text("A release named v1.0 exists (made by boss at ")
