"""Every refused action says why, where the annotator is looking (issue 24's first major): htmx 2 swaps no
4xx answer, so before common/refusals.py and static/js/pages.js the side pane's model buttons did nothing
visible without a model, and "Load more" after the session ended put the login page in the grid."""

import pytest
from playwright.sync_api import expect

from annotator.models import Query
from tests.browser.pages import log_in, post_form

pytestmark = pytest.mark.django_db(transaction=True)

BUTTONS = ("Rerank the top 100", "Structured rerank", "Judge panel", "Draw it (VisRet)")


def press_each_model_button(page):
    """Press each button of the side pane's model box; yield its name and the box's sentence after."""
    box = page.locator("#rerank")
    for name in BUTTONS:
        box.get_by_role("button", name=name).click()
        sentence = box.locator(".notice.error")
        expect(sentence).to_be_visible()
        yield name, sentence


def test_with_no_model_every_model_button_says_so_in_the_pane(page, live_server, labeling, settings, artifacts):
    settings.QUIRE_LMM_BASE_URL = ""
    log_in(page, live_server, next_url=f"/queries/{labeling['query'].pk}/")
    for _, sentence in press_each_model_button(page):
        expect(sentence).to_contain_text("is configured")
    page.screenshot(path=str(artifacts / "refused-no-model.png"))


def test_with_a_model_but_no_image_model_the_drawing_button_says_so(page, live_server, labeling, settings):
    settings.QUIRE_LMM_BASE_URL, settings.QUIRE_LMM_MODEL = "http://127.0.0.1:9/v1", "tiny-vlm"
    settings.QUIRE_IMAGE_MODEL_BASE_URL = ""
    log_in(page, live_server, next_url=f"/queries/{labeling['query'].pk}/")
    box = page.locator("#rerank")
    box.get_by_role("button", name="Draw it (VisRet)").click()
    expect(box.locator(".notice.error")).to_contain_text("image")


def test_on_a_locked_query_the_model_buttons_are_disabled_and_say_why(page, live_server, labeling, settings):
    settings.QUIRE_LMM_BASE_URL, settings.QUIRE_LMM_MODEL = "http://127.0.0.1:9/v1", "tiny-vlm"
    Query.objects.filter(pk=labeling["query"].pk).update(locked=True)
    log_in(page, live_server, next_url=f"/queries/{labeling['query'].pk}/")
    box = page.locator("#rerank")
    expect(box).to_contain_text("This query is locked")
    for name in BUTTONS:
        expect(box.get_by_role("button", name=name)).to_be_disabled()
    expect(page.locator("#submit")).to_be_disabled()
    assert page.locator("#submit").evaluate("b => getComputedStyle(b).opacity") == "0.45"  # and looks it


def test_load_more_after_the_session_ended_says_so_and_adds_no_tile(page, context, live_server, labeling, artifacts):
    log_in(page, live_server, next_url=f"/queries/{labeling['query'].pk}/")
    tiles = page.locator(".tile").count()
    post_form(context, live_server, "/accounts/logout/")  # logged out in another tab
    page.locator("#more").get_by_role("button").click()
    note = page.locator("#more .refusal")
    expect(note).to_contain_text("Your session ended")
    back = f"/accounts/login/?next=%2Fqueries%2F{labeling['query'].pk}%2F"  # and back to this page
    expect(note.get_by_role("link", name="Log in")).to_have_attribute("href", back)
    assert page.locator(".tile").count() == tiles
    assert page.locator("#grid input[name=password]").count() == 0  # no login page in the grid
    page.screenshot(path=str(artifacts / "refused-session-ended.png"))


def test_a_query_text_over_the_limit_is_refused_not_cut(page, live_server, labeling, artifacts):
    """Issue 64: a 1,005-character text pasted into the query form was cut to 1,000 by the field's maxlength and
    saved; the guide says it is refused. It is refused now, with the count, and nothing is stored."""
    log_in(page, live_server, next_url="/")
    before = Query.objects.count()
    text = "egrets " * 143 + "fish"  # 1,005 characters
    assert len(text) == 1005
    page.locator('input[name="text"]').fill(text)
    page.get_by_role("button", name="Add and start labeling").click()
    page.wait_for_load_state("load")
    expect(page.locator(".errorlist")).to_contain_text("A query is at most 1,000 characters; this one has 1,005.")
    assert Query.objects.count() == before
    page.screenshot(path=str(artifacts / "query-text-too-long.png"))
