"""Blind double labeling and adjudication in a real Chromium: the second annotator never sees the first's
label on the overlap sample, and the adjudicator's key decides the final label."""

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from annotator.labels import LabelChange, set_labels
from annotator.models import Judgment, Label
from annotator.team.overlap import draw_sample
from search.facade import search
from tests.browser.pages import log_in, post_form

pytestmark = pytest.mark.django_db(transaction=True)


def test_blind_overlap_then_adjudication(page, live_server, labeling, artifacts):
    query, ann = labeling["query"], labeling["annotator"]
    User.objects.create_user("bob", password="pw-bob-1")
    top = [hit.image_id for hit in search(text=query.text, k=10)]
    set_labels(query_id=query.pk, changes=[LabelChange(i, "not_relevant") for i in top], user=ann, source="keyboard")
    draw_sample(query, fraction=0.5)
    sample = sorted(query.overlap.values_list("image_id", flat=True))
    assert len(sample) == 5

    log_in(page, live_server, "bob", "pw-bob-1", f"/queries/{query.pk}/")
    expect(page.locator(".tile")).to_have_count(50)
    for image_id in top:  # ann's labels show outside the sample only
        want = "" if image_id in sample else "not_relevant"
        expect(page.locator(f'.tile[data-image-id="{image_id}"]')).to_have_attribute("data-label", want)
    assert "not_relevant" not in "".join(
        page.locator(f'.tile[data-image-id="{image_id}"]').evaluate("t => t.outerHTML") for image_id in sample
    )
    page.screenshot(path=str(artifacts / "team-blind-grid.png"), full_page=False)

    first = page.locator(f'.tile[data-image-id="{sample[0]}"]')
    first.click()
    expect(first).to_have_attribute("data-label", "relevant")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert Judgment.objects.get(query=query, image_id=sample[0], annotator=ann).value == "not_relevant"
    assert Label.objects.get(query=query, image_id=sample[0]).value == "undecided"
    page.reload()
    expect(page.locator(f'.tile[data-image-id="{sample[0]}"]')).to_have_attribute("data-label", "relevant")

    page.context.clear_cookies()
    log_in(page, live_server, "boss", "pw-boss-1", f"/queries/{query.pk}/adjudicate")
    card = page.locator(f'.adjudication[data-image-id="{sample[0]}"]')
    expect(card.locator(".judgments")).to_contain_text("ann: not relevant")
    expect(card.locator(".judgments")).to_contain_text("bob: relevant")
    page.screenshot(path=str(artifacts / "team-adjudication.png"), full_page=False)
    page.keyboard.press("1")
    expect(page.locator(".messages")).to_contain_text(f"Image {sample[0]}: final label relevant.")
    expect(page.locator("#queue-empty")).to_be_visible()
    label = Label.objects.get(query=query, image_id=sample[0])
    assert (label.value, label.decided_by, label.annotator.username) == ("relevant", "adjudicated", "boss")


def test_the_team_panel_fills_in_from_the_background(page, live_server, labeling, artifacts):
    """Issue 38: the agreement figures and their intervals, and the not-relevant run, come from the background;
    the query's page says "computing…" and fills them in by itself (htmx asks again), no reload."""
    query, ann = labeling["query"], labeling["annotator"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    top = [hit.image_id for hit in search(text=query.text, k=12)]
    set_labels(query_id=query.pk, changes=[LabelChange(i, "not_relevant") for i in top], user=ann, source="keyboard")
    votes = [LabelChange(i, "relevant" if n < 2 else "not_relevant") for n, i in enumerate(top)]
    set_labels(query_id=query.pk, changes=votes, user=bob, source="keyboard")

    log_in(page, live_server, "boss", "pw-boss-1", f"/dashboard/{query.pk}/")
    agreement = page.locator("#query-agreement")
    expect(agreement).to_contain_text("Agreement (blind votes) on 12 double-labeled images", timeout=60_000)
    expect(page.locator("#team .pair")).to_contain_text("ann · bob: 12 items")
    # The run fills in too: the two split votes are undecided, the ten below them not relevant.
    expect(page.locator("#query-run")).to_have_text("10 of 100", timeout=60_000)
    page.screenshot(path=str(artifacts / "team-panel.png"), full_page=True)


def test_a_decision_made_after_the_session_ended_waits_and_is_saved_after_logging_in(
    page, live_server, labeling, artifacts
):
    """Issue 64: on the adjudication page an ended session turned a decision into a bare login form, and after
    logging in the image was still undecided with nothing said. Now the login page says the decision waits, and the
    queue sends it once the adjudicator is back, as the labeling page does with its labels."""
    query, ann = labeling["query"], labeling["annotator"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    image = search(text=query.text, k=1)[0].image_id
    set_labels(query_id=query.pk, changes=[LabelChange(image, "not_relevant")], user=ann, source="keyboard")
    set_labels(query_id=query.pk, changes=[LabelChange(image, "relevant")], user=bob, source="keyboard")
    assert Label.objects.get(query=query, image_id=image).value == "undecided"

    url = f"/queries/{query.pk}/adjudicate"
    log_in(page, live_server, "boss", "pw-boss-1", url)
    expect(page.locator(f'.adjudication[data-image-id="{image}"]')).to_be_visible()
    post_form(page.context, live_server, "/accounts/logout/")  # the session ends while the queue is open
    page.keyboard.press("1")
    page.wait_for_url("**/accounts/login/**")
    expect(page.locator("#session-ended")).to_have_text(
        "Your session ended: your decision waits and is saved after you log in."
    )
    page.screenshot(path=str(artifacts / "adjudication-session-ended.png"))
    assert Label.objects.get(query=query, image_id=image).value == "undecided"
    page.fill('input[name="username"]', "boss")
    page.fill('input[name="password"]', "pw-boss-1")
    page.click('button[type="submit"]')
    expect(page.locator(".messages")).to_contain_text(f"Image {image}: final label relevant.")
    expect(page.locator("#queue-empty")).to_be_visible()
    page.screenshot(path=str(artifacts / "adjudication-saved-after-login.png"))
    label = Label.objects.get(query=query, image_id=image)
    assert (label.value, label.decided_by, label.annotator.username) == ("relevant", "adjudicated", "boss")
