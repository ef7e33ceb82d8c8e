"""Issue 52 in a real Chromium, with DEBUG off (production) and on (the demo): what a newcomer meets first (the bad
upload here replaces test_refusals.py's, in both modes). Before it, in DEBUG, django-htmx's debug script wrote any
4xx htmx answer over the whole document (staff saw a blank page on every query with no labels, a bad upload blanked
the labeling page); keys pressed before the page's modules were wired were dropped under "All changes saved"; a
browser that cleared every cookie was told "403; retrying…" for good."""

import pytest
from playwright.sync_api import expect

from annotator.models import Judgment, QueryExample
from tests.browser.pages import log_in

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(params=[False, True], ids=["production", "debug"])
def mode(request, settings):
    settings.DEBUG = request.param
    return "debug" if request.param else "production"


def test_staff_open_a_query_with_no_labels_and_the_page_stays(page, live_server, labeling, mode, artifacts):
    query = labeling["query"]
    log_in(page, live_server, "boss", "pw-boss-1", f"/queries/{query.pk}/")
    cost = page.locator("#check-cost")
    expect(cost).to_contain_text("has no labels yet: label down its ranking first", timeout=10_000)
    assert "error" not in (cost.get_attribute("class") or "")  # a state the pane describes, not a refusal
    page.wait_for_timeout(1500)  # the debug script used to blank the page about a second after it showed
    expect(page.locator(".tile")).to_have_count(50)
    expect(page.locator("header.bar")).to_be_visible()
    assert page.locator("script[src*='django-htmx.js']").count() == 0
    page.screenshot(path=str(artifacts / f"unlabeled-query-staff-{mode}.png"), full_page=False)


def test_a_bad_upload_is_refused_beside_its_form(page, live_server, labeling, mode, tmp_path, artifacts):
    log_in(page, live_server, next_url=f"/queries/{labeling['query'].pk}/")
    not_an_image = tmp_path / "notes.jpg"
    not_an_image.write_text("these are my notes, not a photo")
    page.set_input_files('#upload-example input[type="file"]', str(not_an_image))
    page.click('#upload-example button[type="submit"]')
    note = page.locator("#upload-example + .refusal")
    expect(note).to_be_visible()
    assert "image" in note.inner_text().lower()
    page.wait_for_timeout(500)
    expect(page.locator(".tile")).to_have_count(50)  # the page is still there
    assert not QueryExample.objects.exists()
    note.scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / f"bad-upload-{mode}.png"), full_page=False)


def test_keys_pressed_before_the_modules_run_are_kept_then_saved(page, live_server, labeling, mode, artifacts):
    """The labeling module is held back (its file not answered) while the annotator presses keys and Alt+clicks, on
    a CPU slowed sixfold: the page says it is starting and keeps them; once the module runs, they are saved."""
    query = labeling["query"]
    log_in(page, live_server, next_url="/")
    held = []
    page.route("**/js/labeling/main.js", lambda route: held.append(route))
    cdp = page.context.new_cdp_session(page)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 6})
    page.goto(f"{live_server.url}/queries/{query.pk}/", wait_until="commit")
    page.locator(".tile").nth(49).wait_for(state="attached")
    tiles = page.locator(".tile")
    ids = [int(i) for i in tiles.evaluate_all("ts => ts.slice(0, 8).map(t => t.dataset.imageId)")]
    status = page.locator("#save-status")
    expect(status).not_to_have_text("All changes saved")
    for _ in range(4):  # relevant, next; four times
        page.keyboard.press("1")
        page.keyboard.press("ArrowRight")
    page.keyboard.press("0")  # the fifth tile: not relevant
    tiles.nth(7).click(modifiers=["Alt"])  # look at the eighth without labeling it
    page.keyboard.press("0")  # then label it not relevant
    expect(status).to_contain_text("Starting… 11 keys and clicks kept")
    page.screenshot(path=str(artifacts / f"early-keys-kept-{mode}.png"), full_page=False)
    assert not Judgment.objects.filter(query=query).exists()  # nothing sent yet, and nothing said saved
    assert held, "the module was held back while the keys were pressed"
    for route in held:
        route.continue_()
    page.unroute("**/js/labeling/main.js")
    expect(status).to_have_text("All changes saved", timeout=20_000)
    cdp.send("Emulation.setCPUThrottlingRate", {"rate": 1})
    stored = dict(Judgment.objects.filter(query=query).values_list("image_id", "value"))
    wanted = {**{i: "relevant" for i in ids[:4]}, ids[4]: "not_relevant", ids[7]: "not_relevant"}
    assert stored == wanted
    page.screenshot(path=str(artifacts / f"early-keys-saved-{mode}.png"), full_page=False)


def test_a_save_after_every_cookie_was_cleared_says_the_session_ended(page, live_server, labeling, mode, artifacts):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    status = page.locator("#save-status")
    expect(status).to_have_text("All changes saved")
    page.context.clear_cookies()  # the browser's "clear site data": the session and the CSRF token both gone
    page.keyboard.press("1")
    expect(status).to_contain_text("Your session ended")
    expect(status).to_contain_text("1 label is waiting and will be saved after you log in")
    expect(status.get_by_role("link", name="log in again")).to_be_visible()
    page.screenshot(path=str(artifacts / f"cleared-cookies-{mode}.png"), full_page=False)
    assert not Judgment.objects.filter(query=query).exists()

    other = page.context.new_page()  # logging in again in another tab: the waiting label goes
    log_in(other, live_server, next_url="/")
    expect(status).to_have_text("All changes saved", timeout=20_000)
    assert Judgment.objects.filter(query=query, annotator__username="ann", value="relevant").count() == 1
    other.close()


def test_a_staff_form_after_every_cookie_was_cleared_says_the_session_ended(page, live_server, labeling, mode):
    """An htmx form (the side pane's check cost) after the cookies went: the sentence and a login link beside it."""
    query = labeling["query"]
    log_in(page, live_server, "boss", "pw-boss-1", f"/queries/{query.pk}/")
    page.context.clear_cookies()
    page.click("#draw-check")
    note = page.locator("#check-form + .refusal, #check-error").first
    expect(note).to_contain_text("Your session ended")
    expect(note.get_by_role("link", name="Log in")).to_be_visible()
