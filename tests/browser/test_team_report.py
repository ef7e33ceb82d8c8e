"""Issue 55 in a real Chromium: staff open the team page (annotators and queries, sorted by a click, the plot of
seconds per label) and a query's cost line; screenshots for review."""

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from annotator.labels import LabelChange, set_labels
from annotator.team import costs
from search.facade import search
from tests.browser.pages import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_staff_read_what_the_benchmark_cost_and_each_annotators_quality(page, live_server, labeling, artifacts):
    query, ann = labeling["query"], labeling["annotator"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    images = [hit.image_id for hit in search(text=query.text, k=30)]
    for n, image in enumerate(images):
        truth = "relevant" if n < 6 else "not_relevant"
        set_labels(query_id=query.pk, changes=[LabelChange(image, truth, 1500 + 100 * n)], user=ann, source="keyboard")
        if n < 20:
            vote = "not_relevant" if n == 3 else truth
            set_labels(query_id=query.pk, changes=[LabelChange(image, vote, 3000)], user=bob, source="click")
    costs.refresh(None)  # what the background job computes (the page polls until it is there)
    costs.refresh(query.pk)
    log_in(page, live_server, "boss", "pw-boss-1", "/dashboard/")
    page.click("#team-link")
    expect(page.locator("#team-annotators tr[data-annotator]")).to_have_count(2)
    expect(page.locator('#team-annotators tr[data-annotator="ann"]')).to_contain_text("30")
    page.click("#team-annotators th a:text('s per label')")
    expect(page.locator("#team-annotators tr[data-annotator]").first).to_have_attribute("data-annotator", "ann")
    page.click("#team-annotators th a:text('s per label')")  # again: descending
    expect(page.locator("#team-annotators tr[data-annotator]").first).to_have_attribute("data-annotator", "bob")
    expect(page.locator("#seconds-per-label")).to_be_visible()
    page.screenshot(path=str(artifacts / "team-report.png"), full_page=True)
    page.click(f"#team-queries a:text('{query.pk}')")
    expect(page.locator("#query-cost")).to_contain_text("50 labels (50 actions)")
    expect(page.locator("#query-cost")).to_contain_text("5 positives")  # image 3 is undecided: ann and bob split
    page.locator("#query-cost").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "team-query-cost.png"))


def test_a_heavy_download_waits_for_the_background_then_starts_once(page, live_server, labeling, artifacts):
    """Issue 65: team.json was computed in the request (Dawid-Skene). Now its link answers 202 with a page that
    says the figures are being computed and asks again; once the background has them, the download starts, once."""
    query, ann = labeling["query"], labeling["annotator"]
    images = [hit.image_id for hit in search(text=query.text, k=10)]
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in images], user=ann, source="keyboard")
    log_in(page, live_server, "boss", "pw-boss-1", "/dashboard/")
    downloads = []
    page.on("download", lambda download: downloads.append(download))
    page.goto(f"{live_server.url}/exports/team.json")
    expect(page.locator("#computing")).to_contain_text("being computed in the background")
    page.screenshot(path=str(artifacts / "download-computing.png"))
    expect(page.locator("#computing")).to_have_text("Ready: the download has started.", timeout=30_000)
    page.wait_for_timeout(4000)  # a page that asked again would download again
    assert len(downloads) == 1 and downloads[0].suggested_filename == "team.json"
    assert '"annotators"' in Path(downloads[0].path()).read_text(encoding="utf-8")
