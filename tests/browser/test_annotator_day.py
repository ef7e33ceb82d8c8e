"""The annotator's day in real Chromium: what must never be lost or misreported, and the grid's tools.

Each test is one of the failures found when the page was tried as a new user would (issue: "The
annotator's day"), or one of the tools a long day of labeling needs.
"""

import json
import re

import pytest
from playwright.sync_api import expect

from annotator.labels import set_label
from annotator.models import Judgment, Label, LabelEvent, LabelValue
from catalog.models import Image
from search.facade import search
from tests.browser.pages import csrf_token, double_click, log_in, post_form, tile

pytestmark = pytest.mark.django_db(transaction=True)


def image_ids(page) -> list[int]:
    return [int(i) for i in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.imageId)")]


def ranks(page) -> list[int]:
    return [int(i) for i in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.rank)")]


def stored(query) -> dict[int, str]:
    return dict(Label.objects.filter(query=query).values_list("image_id", "value"))


def test_a_rotated_csrf_token_does_not_lose_labels(page, context, live_server, labeling):
    query = labeling["query"]
    url = f"/queries/{query.pk}/"
    log_in(page, live_server, next_url=url)
    before = csrf_token(context)
    # logging in again in a second tab rotates the CSRF token
    post_form(context, live_server, "/accounts/login/", {"username": "ann", "password": "pw-ann-1"})
    assert csrf_token(context) != before
    for _ in range(3):
        page.keyboard.press("ArrowRight")
        page.keyboard.press("u")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    shown = image_ids(page)
    assert stored(query) == {shown[1]: "unsure", shown[2]: "unsure", shown[3]: "unsure"}


def test_each_label_is_recorded_as_it_was_given_in_a_mixed_batch(page, live_server, labeling):
    """A click is stored as a click and a key as a key when one request carries both, as the retry after
    a lost connection does (the page once sent a whole batch as its first label's source)."""
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    shown = image_ids(page)
    offline = [True]

    def network(route):
        if route.request.method == "POST" and offline[0]:
            route.abort()  # the server cannot be reached: the labels wait, to be sent together
        else:
            route.continue_()

    page.route("**/*", network)
    tile(page, 1).click()  # relevant, by a click
    page.keyboard.press("ArrowRight")
    page.keyboard.press("0")  # not relevant, by a key
    expect(page.locator("#save-status")).not_to_have_text("All changes saved")
    offline[0] = False
    expect(page.locator("#save-status")).to_have_text("All changes saved", timeout=30_000)
    page.unroute("**/*")
    assert stored(query) == {shown[1]: "relevant", shown[2]: "not_relevant"}
    given = dict(LabelEvent.objects.filter(query=query).values_list("image_id", "source"))
    assert given == {shown[1]: "click", shown[2]: "keyboard"}
    assert dict(Judgment.objects.filter(query=query).values_list("image_id", "source")) == given


def test_a_refused_save_stays_flagged_and_pending_until_it_lands(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    answers = []

    def refuse(route):
        answers.append(route.request.post_data)
        route.fulfill(status=403, content_type="application/json", body=json.dumps({"error": "Forbidden (test)"}))

    page.route("**/labels", refuse)
    expect(tile(page, 0)).to_have_class("tile selected")  # the page's script has taken the keys
    page.keyboard.press("1")
    expect(page.locator(".tile.unsaved")).to_have_count(1)
    expect(page.locator("#save-status")).to_contain_text("Forbidden (test)")
    for _ in range(150):  # wait for a retry, refused too: the status must not turn to "saved" meanwhile
        if len(answers) >= 2:
            break
        page.wait_for_timeout(100)
    expect(page.locator("#save-status")).to_contain_text("Forbidden (test)")
    assert len(answers) >= 2 and not Label.objects.exists()
    page.unroute("**/labels")
    expect(page.locator("#save-status")).to_have_text("All changes saved", timeout=15_000)
    expect(page.locator(".tile.unsaved")).to_have_count(0)
    assert stored(query) == {image_ids(page)[0]: "relevant"}


def test_a_save_refused_for_good_is_said_and_kept(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.route(
        "**/labels",
        lambda route: route.fulfill(status=400, content_type="application/json", body='{"error": "bad value"}'),
    )
    page.keyboard.press("0")
    expect(page.locator("#save-status")).to_have_text("1 label not saved: bad value")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("ArrowLeft")
    expect(page.locator("#save-status")).to_have_text("1 label not saved: bad value")
    expect(page.locator(".tile.unsaved")).to_have_count(1)
    pending = page.evaluate(f"localStorage.getItem('quire:pending:{query.pk}')")
    assert json.loads(pending)[0][1]["value"] == "not_relevant"


def test_an_ended_session_says_so_keeps_the_labels_and_sends_them_after_login(page, context, live_server, labeling):
    query = labeling["query"]
    url = f"/queries/{query.pk}/"
    log_in(page, live_server, next_url=url)
    shown = image_ids(page)
    post_form(context, live_server, "/accounts/logout/")  # logged out in another tab
    page.keyboard.press("1")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("u")
    status = page.locator("#save-status")
    expect(status).to_contain_text("Your session ended")
    expect(status).to_contain_text("2 labels are waiting")
    assert not Label.objects.exists()
    page.once("dialog", lambda dialog: dialog.accept())  # "leave the page?": yes, they are kept
    status.locator("a", has_text="log in again").click()
    page.wait_for_url("**/accounts/login/**")
    page.fill('input[name="username"]', "ann")
    page.fill('input[name="password"]', "pw-ann-1")
    page.click('button[type="submit"], input[type="submit"]')
    page.wait_for_url(f"**{url}")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert stored(query) == {shown[0]: "relevant", shown[1]: "unsure"}
    expect(tile(page, 0)).to_have_attribute("data-label", "relevant")


def test_hide_labeled_pages_continue_the_true_ranking(page, live_server, labeling):
    query = labeling["query"]
    ranking = [hit.image_id for hit in search(text=query.text, k=120)]
    for image_id in ranking[:10]:
        set_label(query_id=query.pk, image_id=image_id, value="not_relevant", source="api")
    log_in(page, live_server, next_url=f"/queries/{query.pk}/?hide=1")
    assert ranks(page) == list(range(11, 61)) and image_ids(page) == ranking[10:60]
    page.click("#submit")
    expect(page.locator("#save-status")).to_contain_text("Submitted: 50 images")
    page.keyboard.press("m")
    expect(page.locator(".tile")).to_have_count(100)
    assert ranks(page)[50:] == list(range(61, 111)) and image_ids(page)[50:] == ranking[60:110]
    expect(tile(page, 50)).to_have_class("tile selected")  # the selection moves to the first new tile


def test_images_without_a_taxon_date_place_or_license_render(page, live_server, labeling):
    query = labeling["query"]
    Image.objects.update(taxon=None, observed_on=None, latitude=None, longitude=None, license="", rights_holder="")
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    expect(page.locator(".tile")).to_have_count(50)
    expect(tile(page, 0).locator("figcaption")).to_contain_text("no taxon")
    page.keyboard.press("m")
    expect(page.locator(".tile")).to_have_count(100)
    expect(page.locator("#detail")).to_contain_text("Image id")


def test_enter_on_a_suggestion_adds_the_filter_and_labels_nothing(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.click("details.filters summary")
    box = page.locator('input[type="text"][name="taxon"]')
    grid_top = page.locator("#grid").bounding_box()["y"]
    box.press_sequentially("puff", delay=30)
    expect(page.locator(".suggestion")).to_have_count(1)
    assert page.locator("#grid").bounding_box()["y"] == grid_top  # the suggestions float over the grid
    box.press("ArrowDown")
    page.keyboard.press("Enter")
    page.wait_for_url("**taxon=11**")
    expect(page.locator(".chip.on")).to_have_text("✔ Atlantic Puffin (Fratercula arctica) ×")
    assert not Label.objects.exists()
    assert set(Image.objects.filter(pk__in=image_ids(page)).values_list("taxon_id", flat=True)) == {11}


def test_an_unknown_taxon_is_shown_red_and_the_valid_filters_keep_working(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.goto(f"{live_server.url}/queries/{query.pk}/?taxon=11&taxon=Puffinn")
    expect(page.locator(".chip.bad")).to_contain_text("Puffinn")
    expect(page.locator("#filter-errors")).to_contain_text("No taxon is called 'Puffinn'")
    expect(page.locator(".tile")).to_have_count(40)
    assert set(Image.objects.filter(pk__in=image_ids(page)).values_list("taxon_id", flat=True)) == {11}


def test_a_range_is_labeled_with_one_key_and_undone_with_one(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    shown = image_ids(page)
    for _ in range(3):
        page.keyboard.press("Shift+ArrowRight")
    expect(page.locator(".tile.in-range")).to_have_count(4)
    page.keyboard.press("1")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert stored(query) == dict.fromkeys(shown[:4], "relevant")
    tile(page, 10).click()  # one click: one label
    tile(page, 14).click(modifiers=["Shift"])  # shift+click: a range from the selection
    expect(page.locator(".tile.in-range")).to_have_count(5)
    page.keyboard.press("u")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert stored(query) == {**dict.fromkeys(shown[:4], "relevant"), **dict.fromkeys(shown[10:15], "unsure")}
    page.keyboard.press("z")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert stored(query) == {**dict.fromkeys(shown[:4], "relevant"), shown[10]: "relevant"}


def test_undo_takes_back_a_whole_submit(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.keyboard.press("1")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    page.keyboard.press("s")
    expect(page.locator("#save-status")).to_contain_text("Submitted: 49 images marked not relevant")
    assert Label.objects.filter(query=query, value=LabelValue.NOT_RELEVANT).count() == 49
    expect(page.locator("#detail .label-name")).to_have_text("Relevant")
    page.keyboard.press("z")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert stored(query) == {image_ids(page)[0]: "relevant"}
    assert LabelEvent.objects.filter(source="submit").count() == 49  # the history keeps both
    assert LabelEvent.objects.filter(new_value="", source="keyboard").count() == 49


def test_keys_belong_to_controls_when_they_have_the_focus(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.focus("#help-button")
    page.keyboard.press("Enter")  # the button's own action: the help opens, nothing is labeled
    expect(page.locator("#help")).to_be_visible()
    page.keyboard.press("Escape")
    page.focus('input[name="q"]')
    page.keyboard.press("u")
    page.keyboard.press("Escape")  # leaves the box; keys are the grid's again
    page.keyboard.press("0")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert stored(query) == {image_ids(page)[0]: "not_relevant"}
    assert page.input_value('input[name="q"]') in (f"u{query.text}", f"{query.text}u")  # the u went into the box
    page.focus("#submit")  # Esc from a button gives the keys back to the grid too
    page.keyboard.press("Escape")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("u")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert stored(query) == {image_ids(page)[0]: "not_relevant", image_ids(page)[1]: "unsure"}


@pytest.mark.parametrize("width, height", [(1280, 720), (1920, 1080)])
def test_the_grid_at_laptop_and_desktop_sizes(page, live_server, labeling, artifacts, width, height):
    query = labeling["query"]
    page.set_viewport_size({"width": width, "height": height})
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.keyboard.press("1")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("0")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("u")
    page.keyboard.press("ArrowRight")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    whole = page.locator(".tile").evaluate_all(
        "tiles => tiles.filter(t => { const r = t.getBoundingClientRect();"
        f" return r.top >= 0 && r.bottom <= {height}; }}).length"
    )
    assert whole >= 15, f"{whole} whole tiles at {width}x{height}"
    page.screenshot(path=str(artifacts / f"labeling-{width}x{height}.png"))
    past_the_edge = page.locator(".side").evaluate(
        """side => { const edge = side.getBoundingClientRect().right + 1;
        return [...side.querySelectorAll("*")].filter(e => e.getClientRects().length
            && e.getBoundingClientRect().right > edge).map(e => `${e.tagName}.${e.className}`); }"""
    )
    assert past_the_edge == []  # nothing of the side pane cut off at its column's edge
    page.mouse.wheel(0, 600)  # the counts and the save status stay in view
    expect(page.locator(".toolbar")).to_be_in_viewport()
    page.keyboard.press("f")
    expect(page.locator("#lightbox")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.locator("#lightbox")).to_be_hidden()


def test_a_double_click_on_add_makes_one_query(page, live_server, labeling):
    from annotator.models import Query

    log_in(page, live_server, next_url="/")
    page.fill('input[name="text"]', "a heron with a fish")
    assert double_click(page, "Add and start labeling") == 1  # the second click sent nothing
    page.wait_for_url("**/queries/*/")  # the labeling page, not "already has this text" from a second submit
    assert Query.objects.filter(text="a heron with a fish").count() == 1


def test_the_side_panes_figures_follow_the_labels(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    expect(page.locator("#not-relevant-run")).to_have_text("0")
    for _ in range(3):
        page.keyboard.press("0")
        page.keyboard.press("ArrowRight")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    expect(page.locator("#not-relevant-run")).to_have_text("3", timeout=10_000)  # no reload


def test_alt_click_selects_a_tile_to_look_at_without_labeling_it(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    shown = image_ids(page)
    tile(page, 5).click(modifiers=["Alt"])
    expect(tile(page, 5)).to_have_class(re.compile(r"\bselected\b"))
    expect(page.locator("#detail")).to_contain_text(str(shown[5]))
    page.wait_for_timeout(300)
    assert not Label.objects.filter(query=query).exists()


def test_a_range_and_submit_are_recorded_as_what_they_were(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    shown = image_ids(page)
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("Shift+ArrowRight")
    page.keyboard.press("u")  # a range of three, with one key
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    page.click("#submit")  # every other shown image: not relevant
    expect(page.locator("#save-status")).to_contain_text(f"Submitted: {len(shown) - 3} images marked not relevant")
    expect(page.locator('.tile[data-label="not_relevant"]')).to_have_count(len(shown) - 3)
    given = dict(LabelEvent.objects.filter(query=query).values_list("image_id", "source"))
    assert {given[i] for i in shown[:3]} == {"keyboard"} and {given[i] for i in shown[3:]} == {"submit"}


def test_a_double_click_on_upload_stores_one_example(page, live_server, labeling, tmp_path, artifacts):
    """Issue 64: a double click on "Upload and rank like it" stored the example twice; the guide says a second click
    while it is sent does nothing."""
    from PIL import Image as Picture

    from annotator.models import QueryExample

    query = labeling["query"]
    photo = tmp_path / "heron.png"
    Picture.new("RGB", (64, 48), (30, 90, 160)).save(photo)
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.set_input_files('#upload-example input[type="file"]', str(photo))
    assert double_click(page, "Upload and rank like it") == 1  # the second click sent nothing
    expect(page.locator(".examples figure, #examples figure").first).to_be_visible(timeout=20_000)
    assert QueryExample.objects.filter(query=query).count() == 1
    page.screenshot(path=str(artifacts / "upload-double-click.png"))
