"""Issue 64: `./dev demo --team` on a first run (a data folder that has never held anything), then each of its roles
finds its work by links, as a newcomer would, in a real Chromium against the demo's own server: the two annotators
label the blind overlap sample from the query list, the adjudicator reaches the queue from the query list and
decides the image they split on, and the lead reaches the dashboard and the query's admin page where annotators are
assigned. The first run ended in NoIndex before."""

import subprocess
from types import SimpleNamespace

import pytest
from playwright.sync_api import expect

from tests.annotator.test_demo_commands import ROOT, environment
from tests.browser.pages import log_in
from tests.servers import runserver

pytestmark = pytest.mark.slow
PASSWORD = "quire-demo"


@pytest.fixture
def demo_server(tmp_path):
    """`./dev demo --team` run first on an empty data folder, then the demo's server over it; its address."""
    data = tmp_path / "data"
    assert not data.exists()
    first = subprocess.run(
        ["./dev", "demo", "--no-serve", "--images", "40", "--team"],
        cwd=ROOT, env=environment(data), capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    assert "NoIndex" not in first.stderr and "Traceback" not in first.stderr
    assert "Overlap sample: the top" in first.stdout and "images added now" in first.stdout
    server, port = runserver(environment(data))
    url = f"http://127.0.0.1:{port}"
    try:
        yield SimpleNamespace(url=url)
    finally:
        server.terminate()
        server.wait(timeout=20)


def label_the_first_tile(page, server, user, key):
    """`user` logs in, opens the first query from the query list and labels its first tile with `key`."""
    page.context.clear_cookies()
    log_in(page, server, user, PASSWORD, "/")
    page.locator("#queries tbody tr, table tbody tr").first.locator("td.qtext a").first.click()
    page.wait_for_url("**/queries/*/")
    expect(page.locator(".tile").first).to_be_visible()
    page.keyboard.press(key)
    expect(page.locator(".tile").first).to_have_attribute("data-label", {"1": "relevant", "0": "not_relevant"}[key])
    expect(page.locator("#save-status")).to_have_text("All changes saved")


def test_the_team_demo_on_a_first_run_then_each_role_finds_its_work(page, demo_server, artifacts):
    label_the_first_tile(page, demo_server, "annotator", "1")
    page.screenshot(path=str(artifacts / "team-demo-annotator.png"))
    label_the_first_tile(page, demo_server, "annotator2", "0")  # blind to the first vote: they split

    page.context.clear_cookies()
    log_in(page, demo_server, "adjudicator", PASSWORD, "/")
    way_in = page.locator(".adjudicate-link", has_text="adjudicate (1 undecided)")
    expect(way_in).to_have_count(1)
    page.screenshot(path=str(artifacts / "team-demo-adjudicator-home.png"))
    way_in.click()
    page.wait_for_url("**/adjudicate")
    card = page.locator(".adjudication").first
    expect(card.locator(".judgments")).to_contain_text("annotator: relevant")
    expect(card.locator(".judgments")).to_contain_text("annotator2: not relevant")
    page.keyboard.press("1")
    expect(page.locator(".messages")).to_contain_text("final label relevant.")
    expect(page.locator("#queue-empty")).to_be_visible()
    page.goto(f"{demo_server.url}/")  # the query list no longer counts it
    expect(page.locator(".adjudicate-link", has_text="undecided")).to_have_count(0)
    page.locator("td.qtext a").first.click()  # the query's own page links the queue too
    expect(page.locator("#adjudicate-crumb")).to_have_text("adjudicate")

    page.context.clear_cookies()
    log_in(page, demo_server, "lead", PASSWORD, "/")
    page.get_by_role("link", name="Dashboard", exact=True).click()
    page.wait_for_url("**/dashboard/")
    expect(page.locator("#draw-benchmark")).to_be_enabled()
    page.screenshot(path=str(artifacts / "team-demo-lead-dashboard.png"))
    page.get_by_role("link", name="Admin", exact=True).click()  # where the dashboard says annotators are assigned
    page.get_by_role("link", name="Queries").first.click()
    page.locator("#result_list tbody tr th a").first.click()
    expect(page.get_by_text("Assignments", exact=False).first).to_be_visible()
    page.screenshot(path=str(artifacts / "team-demo-lead-assign.png"), full_page=True)
