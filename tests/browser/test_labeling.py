"""The annotator's whole day in a real Chromium: Playwright drives Debian's chromium against a live server."""

import csv
import io
from pathlib import Path

import pytest
from django.contrib.auth.models import Permission
from playwright.sync_api import expect

from annotator.models import Label, LabelValue
from catalog.models import Image
from common import background
from tests.browser.pages import log_in, tile

pytestmark = pytest.mark.django_db(transaction=True)


def saved(page):
    expect(page.locator("#save-status")).to_have_text("All changes saved")


def test_the_whole_labeling_flow(page, live_server, labeling, artifacts):
    query = labeling["query"]
    # The same person then reads the dashboard and downloads the labels: those permissions too.
    labeling["annotator"].user_permissions.add(*Permission.objects.filter(codename__in=["view_label", "export_labels"]))
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    expect(page.locator(".tile")).to_have_count(50)

    page.fill('input[name="q"]', "skimmer skimming over water")
    page.press('input[name="q"]', "Enter")
    page.wait_for_url("**q=skimmer+skimming+over+water**")
    expect(page.locator(".tile")).to_have_count(50)

    for typed, choice in (
        ("puff", "Atlantic Puffin (Fratercula arctica)"),
        ("laugh", "Laughing Gull (Leucophaeus atricilla)"),
    ):
        if page.locator("details.filters").get_attribute("open") is None:
            page.click("details.filters summary")
        page.locator('input[type="text"][name="taxon"]').press_sequentially(typed, delay=30)
        page.locator(".suggestion", has_text=choice).click()
        page.wait_for_load_state("load")
        expect(page.locator(".chip.on", has_text=choice)).to_be_visible()
    expect(page.locator(".chip.on")).to_have_count(2)
    shown = [int(i) for i in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.imageId)")]
    assert set(Image.objects.filter(pk__in=shown).values_list("taxon_id", flat=True)) == {11, 12}

    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    expect(tile(page, 2)).to_have_attribute("data-label", "relevant")
    page.keyboard.press("ArrowRight")
    page.keyboard.press(" ")
    expect(tile(page, 3)).to_have_attribute("data-label", "relevant")
    expect(tile(page, 3)).to_have_class("tile selected")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("u")
    expect(tile(page, 4)).to_have_attribute("data-label", "unsure")
    saved(page)
    assert Label.objects.get(image_id=shown[4]).value == LabelValue.UNSURE
    page.keyboard.press("z")
    expect(tile(page, 4)).to_have_attribute("data-label", "")
    page.keyboard.press("ArrowDown")  # a row down, then back up
    page.keyboard.press("ArrowUp")
    expect(tile(page, 4)).to_have_class("tile selected")
    page.keyboard.press("?")
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press("Escape")
    saved(page)
    assert dict(Label.objects.values_list("image_id", "value")) == {shown[2]: "relevant", shown[3]: "relevant"}
    page.screenshot(path=str(artifacts / "labeling-page.png"), full_page=True)

    page.click('[data-action="load-more"]')
    expect(page.locator(".tile")).to_have_count(80)  # the two species have 80 images
    expect(page.locator("#shown-count")).to_have_text("2 relevant of 80 shown")
    page.click("#submit")
    expect(page.locator("#save-status")).to_contain_text("Submitted: 78 images marked not relevant")
    assert Label.objects.filter(value=LabelValue.NOT_RELEVANT).count() == 78

    page.reload()
    labels_shown = page.locator(".tile").evaluate_all("tiles => tiles.map(t => [t.dataset.imageId, t.dataset.label])")
    assert {int(i): v for i, v in labels_shown} == {
        i: v for i, v in Label.objects.filter(image_id__in=shown[:50]).values_list("image_id", "value")
    }
    assert labels_shown[2][1] == "relevant" and len(labels_shown) == 50

    page.goto(f"{live_server.url}/dashboard/")
    row = page.locator(f'tr[data-query-id="{query.pk}"]')
    expect(row.locator(".labeled")).to_have_text("80")
    expect(row.locator(".relevant")).to_have_text("2")
    # The run comes from the background: once its job has run, a reload shows it; no claim without a check.
    background.wait_for_all(timeout=120)
    page.reload()
    expect(row).not_to_contain_text("computing…")
    expect(row.locator(".claim")).to_have_text("no check")
    page.screenshot(path=str(artifacts / "dashboard.png"), full_page=True)

    page.click(f'a[href="/dashboard/{query.pk}/"]')
    with page.expect_download() as download:
        page.click(f'a[href="/exports/inquire_labels.csv?query={query.pk}"]')
    rows = list(csv.DictReader(io.StringIO(Path(download.value.path()).read_text(encoding="utf-8"))))
    assert len(rows) == 80
    assert {int(r["image_id"]) for r in rows if r["label"] == "relevant"} == {shown[2], shown[3]}
    assert {r["annotator"] for r in rows} == {"ann"}


def test_a_failed_save_is_flagged_retried_and_not_lost(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    refused = []

    def flaky(route):
        if len(refused) < 2:  # the server cannot be reached, twice
            refused.append(route.request.post_data)
            route.abort("connectionrefused")
        else:
            route.continue_()

    page.route("**/labels", flaky)
    first = int(tile(page, 0).get_attribute("data-image-id"))
    page.keyboard.press("Enter")
    expect(tile(page, 0)).to_have_attribute("data-label", "relevant")  # shown at once
    expect(page.locator(".tile.unsaved")).to_have_count(1)
    expect(page.locator("#save-status")).to_contain_text("retrying")
    saved(page)
    expect(page.locator(".tile.unsaved")).to_have_count(0)
    assert len(refused) == 2
    assert Label.objects.get(query=query, image_id=first).value == LabelValue.RELEVANT


def test_back_to_the_labeling_page_shows_the_labels_saved_since(page, live_server, labeling, artifacts):
    """Issue 64: labels saved, away by the breadcrumb, then Back: the page came from the browser's cache with the
    tiles as they were before the saves, while the counts (fetched anew) included them. The page is no-store now."""
    query = labeling["query"]
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    expect(page.locator(".tile")).to_have_count(50)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("Enter")
    expect(tile(page, 1)).to_have_attribute("data-label", "relevant")
    expect(tile(page, 2)).to_have_attribute("data-label", "relevant")
    saved(page)
    page.locator(".crumbs a, a", has_text="Queries").first.click()
    page.wait_for_load_state("load")
    page.go_back()
    expect(page.locator(".tile")).to_have_count(50)
    expect(tile(page, 1)).to_have_attribute("data-label", "relevant")
    expect(tile(page, 2)).to_have_attribute("data-label", "relevant")
    page.screenshot(path=str(artifacts / "labeling-after-back.png"))
    response = page.request.get(f"{live_server.url}/queries/{query.pk}/")
    assert "no-store" in response.headers["cache-control"]


def test_next_unlabeled_passes_the_labeled_tiles_it_loads(page, live_server, labeling):
    """Issue 64: `n` at the last tile loaded the next page and selected its first tile (rank 51), labeled or not;
    it now selects the first unlabeled one (rank 75 here), loading on while a loaded page holds none."""
    query = labeling["query"]
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    expect(page.locator(".tile")).to_have_count(50)
    page.keyboard.press("m")
    expect(page.locator(".tile")).to_have_count(100)
    tile(page, 50).click()
    for _ in range(23):
        page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("0")
    expect(page.locator('.tile[data-label="not_relevant"]')).to_have_count(24)
    saved(page)
    page.reload()
    expect(page.locator(".tile")).to_have_count(50)
    tile(page, 49).click()
    page.keyboard.press("n")
    expect(page.locator(".tile")).to_have_count(100)
    expect(page.locator(".tile.selected")).to_have_attribute("data-rank", "75")
    expect(tile(page, 74)).to_have_class("tile selected")


def test_the_keys_work_after_a_submit_with_nothing_to_submit(page, live_server, labeling):
    """Issue 64: a click on Submit with every tile labeled left the focus on the button, and the label keys stopped
    working with nothing saying why."""
    query = labeling["query"]
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    expect(page.locator(".tile")).to_have_count(50)
    page.click("#submit")
    expect(page.locator(".tile[data-label='not_relevant']")).to_have_count(50)
    expect(page.locator("#save-status")).to_contain_text("Submitted: 50 images marked not relevant")
    page.click("#submit")
    expect(page.locator("#save-status")).to_have_text("Nothing to submit: every image shown is labeled.")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("1")
    expect(tile(page, 1)).to_have_attribute("data-label", "relevant")
    saved(page)
    page.locator("#submit").focus()  # tabbed to: a letter or a digit still labels, Enter presses the button
    page.keyboard.press("0")
    expect(tile(page, 1)).to_have_attribute("data-label", "not_relevant")
    saved(page)
    assert Label.objects.get(query=query, image_id=tile(page, 1).get_attribute("data-image-id")).value == "not_relevant"
