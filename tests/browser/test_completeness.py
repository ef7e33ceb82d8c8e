"""Issue 39 in a real Chromium: staff draw a completeness check from the side pane (its cost shown first), label
its random sample with the keys in the "completeness check" ranking, and the claim appears in the side pane."""

import re

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from annotator.completeness import certify, check_requests, checks, sampled
from annotator.labels import LabelChange, set_labels
from annotator.models import CompletenessCheck, Judgment
from search.facade import search
from tests.annotator.claims_api import ONE_LOOK
from tests.browser.pages import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_check_drawn_from_the_side_pane_labeled_with_the_keys_certifies(page, live_server, labeling, artifacts):
    query, ann = labeling["query"], labeling["annotator"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    top = [hit.image_id for hit in search(text=query.text, k=30)]
    changes = [LabelChange(image_id, "relevant" if n % 3 == 0 else "not_relevant") for n, image_id in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    positives = [change for change in changes if change.value == "relevant"]
    set_labels(query_id=query.pk, changes=positives, user=bob, source="keyboard")  # confirmed: two judgments each

    log_in(page, live_server, "boss", "pw-boss-1", f"/queries/{query.pk}/")
    expect(page.locator("#completeness-status")).to_have_text("no check yet")
    form = page.locator("#check-form")
    # Changes quicker than the answers: each answer lands in the box that asked, so the last change's answer is the
    # one shown (an answer that replaced its asker used to strand the next request and show a stale cost).
    for target, kind in (("0.95", "top"), ("0.9", ""), ("0.8", "collection"), ("0.9", "top"), ("0.8", "")):
        form.locator('select[name="target_recall"]').select_option(target)
        form.locator('select[name="kind"]').select_option(kind)
    form.locator('select[name="target_recall"]').select_option("0.8")
    form.locator('select[name="kind"]').select_option("top")
    page.fill("#check-depth", "50")
    page.locator("#check-depth").dispatch_event("change")
    cost = page.locator("#check-cost-labels")
    # The cost is shown before drawing, for the frame as now chosen: top 50 of each ranking.
    frame = {"kind": "top", "depth": 50}
    asked = check_requests.read_request({"target_recall": 0.8, "confidence": 0.95, "frame": frame})
    said = checks.situation(query, asked)
    expect(cost).to_have_text(str(said.sample), timeout=10_000)
    expect(page.locator("#check-cost")).to_contain_text("images each looked at once after the draw")
    expect(page.locator("#check-first-stage")).to_have_text(
        f"Drawn in two stages: if its first {said.first_stage} images count no positive, the check certifies "
        "without the rest."
    )
    expect(page.locator("#check-cost")).to_contain_text(
        f"a random sample of the {said.sampled_from} images of a frame of {said.frame_size} that are not its "
        f"{said.found} confirmed positives"
    )
    page.locator("#check-cost").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "completeness-cost.png"), full_page=False)
    wanted = int(cost.inner_text())
    page.click("#draw-check")

    page.wait_for_url("**ranking=check")
    check = CompletenessCheck.objects.get(query=query)
    sample = list(check.images.order_by("position").values_list("image_id", flat=True))
    assert len(sample) == wanted > 0
    tested = certify.tested_at(0.95, 1)
    assert wanted == certify.check_size(
        check.found_at_draw, check.sampled_from, 0.8, tested, ONE_LOOK, tolerate=checks.TOLERATE
    )
    expect(page.locator("#completeness-status")).to_have_text("checking")
    # Drawn in two stages: the grid shows the first stage's images, which certify if they count no positive.
    first = sample[: check.first_stage]
    assert 0 < len(first) < len(sample)
    expect(page.locator(".tile")).to_have_count(len(first))
    # The first stage in the sample's random order, whatever anyone said of its images (Ann's negatives drawn into
    # it too), from the boss's own place in it (nobody else is looking): each wants one fresh look, the boss's;
    # every tile shows unlabeled.
    start = sampled.own_place(check, query, User.objects.get(username="boss").pk, len(first))
    shown = [int(i) for i in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.imageId)")]
    assert shown == first[start:] + first[:start]
    assert set(page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.label)")) == {""}
    page.screenshot(path=str(artifacts / "completeness-check-grid.png"), full_page=False)
    for _ in first:
        page.keyboard.press("0")
        page.keyboard.press("ArrowRight")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert Judgment.objects.filter(query=query, image_id__in=sample, annotator__username="boss").count() == len(first)
    check.refresh_from_db()  # the write that gave the first stage's last look decided it
    assert check.status == "certified" and check.positives == 0 and check.recall_lower_bound >= 0.8
    assert check.looked_at == len(first)
    page.reload()
    expect(page.locator("#completeness-status")).to_have_text("certified")
    expect(page.locator("#completeness-claim")).to_contain_text(
        "Recall is at least 80% with 95% confidence over the frame"
    )
    expect(page.locator("#completeness-claim")).to_contain_text("positives outside the frame: not bounded")
    expect(page.locator("#completeness-frame")).to_contain_text(f"({check.stratum.frame_size} images)")
    expect(page.locator("#completeness-bound")).to_contain_text(f"at {100 * tested:.2f}% confidence")
    expect(page.locator("#completeness-estimate")).to_contain_text("Positives in the frame")
    expect(page.locator("#completeness-bound")).to_contain_text(
        f"sample of {len(sample)} ({len(first)} looked at: its first stage counted no positive)"
    )
    page.locator("#completeness-box").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "completeness-certified.png"), full_page=False)

    page.goto(f"{live_server.url}/dashboard/?sort=-claim")
    claim = page.locator(f'tr[data-query-id="{query.pk}"] .claim')
    expect(claim).to_have_text("✓ ≥80% @95%")
    frame = f"over its frame (the top of the text and learned rankings, {check.stratum.frame_size} images); check 1"
    expect(claim).to_have_attribute("title", re.compile(re.escape(frame)))
    page.screenshot(path=str(artifacts / "completeness-dashboard.png"), full_page=True)


def test_a_refused_check_says_why_in_the_form(page, live_server, labeling):
    query = labeling["query"]
    log_in(page, live_server, "boss", "pw-boss-1", f"/queries/{query.pk}/")  # no label yet: nothing to check
    expect(page.locator("#check-cost")).to_contain_text("has no labels yet", timeout=10_000)
    page.click("#draw-check")
    expect(page.locator("#check-error")).to_contain_text("has no labels yet")
    assert not CompletenessCheck.objects.exists()


def test_the_side_pane_asks_for_confirmations_before_a_draw(page, live_server, labeling, artifacts):
    """Issue 62: before any draw the advice says "wait" while the frame's single positives wait for the adjudicator,
    the cost line gives both costs, a draw is refused with the reason in the form; the adjudicator confirms them in
    the queue, and the first draw counts them found."""
    query, ann = labeling["query"], labeling["annotator"]
    top = [hit.image_id for hit in search(text=query.text, k=30)]
    changes = [LabelChange(image_id, "relevant" if n % 3 == 0 else "not_relevant") for n, image_id in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")  # 10 single positives

    log_in(page, live_server, "boss", "pw-boss-1", f"/queries/{query.pk}/")
    expect(page.locator("#completeness-advice")).to_contain_text("Next: wait")
    expect(page.locator("#completeness-advice")).to_contain_text("10 positives of the frame wait")
    unconfirmed = page.locator("#check-cost-unconfirmed")
    expect(unconfirmed).to_contain_text("10 single-judgment positives wait for an adjudicator's confirmation")
    expect(unconfirmed).to_contain_text("once they are confirmed the check costs")
    page.locator("#check-cost").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "completeness-confirm-first.png"), full_page=False)
    page.click("#draw-check")
    expect(page.locator("#check-error")).to_contain_text("wait for an adjudicator's confirmation")
    expect(page.locator("#check-error")).to_contain_text("once they are confirmed")
    page.locator("#check-error").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "completeness-draw-refused.png"), full_page=False)
    assert not CompletenessCheck.objects.exists()

    page.goto(f"{live_server.url}/queries/{query.pk}/adjudicate")
    for left in range(10, 0, -1):
        expect(page.locator(".adjudication")).to_have_count(left)
        page.keyboard.press("1")
        expect(page.locator(".messages")).to_contain_text("final label relevant")
    expect(page.locator("#queue-empty")).to_be_visible()

    page.goto(f"{live_server.url}/queries/{query.pk}/")
    expect(page.locator("#completeness-advice")).not_to_contain_text("Next: wait")
    expect(page.locator("#check-cost-unconfirmed")).to_have_count(0)
    expect(page.locator("#check-cost-labels")).to_be_visible()
    page.click("#draw-check")
    page.wait_for_url("**ranking=check")
    check = CompletenessCheck.objects.get(query=query)
    assert check.found_at_draw == 10 and check.looks == 1


def test_a_check_that_met_one_positive_too_many_says_so_in_the_side_pane(page, live_server, labeling, artifacts):
    """The adjudicator's key that confirms the positive one too many decides the check (curtailed sampling): the
    side pane says it is not certified, after how many of its images, and why the rest were not looked at."""
    query, ann, admin = labeling["query"], labeling["annotator"], labeling["admin"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    top = [hit.image_id for hit in search(text=query.text, k=30)]
    changes = [LabelChange(image_id, "relevant" if n % 3 == 0 else "not_relevant") for n, image_id in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    positives = [change for change in changes if change.value == "relevant"]
    set_labels(query_id=query.pk, changes=positives, user=bob, source="keyboard")  # 10 confirmed
    asked = check_requests.read_request({"target_recall": 0.5, "confidence": 0.9, "frame": {"kind": "collection"}})
    check, _ = checks.draw(query, asked, admin)
    sample = list(check.images.order_by("position").values_list("image_id", flat=True))
    most = certify.most_positives(10, check.sampled_from, len(sample), 0.5, check.tested_at, check.miss_rate)
    judged = set(Judgment.objects.filter(query=query, annotator=ann).values_list("image_id", flat=True))
    fresh = [image_id for image_id in sample if image_id not in judged][: most + 1]
    assert len(fresh) == most + 1 < len(sample) - 1, (most, len(sample))
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in fresh], user=ann, source="keyboard")

    log_in(page, live_server, "boss", "pw-boss-1", f"/queries/{query.pk}/adjudicate")
    for left in range(most + 1, 0, -1):
        expect(page.locator(".adjudication")).to_have_count(left)
        page.keyboard.press("1")
        expect(page.locator(".messages")).to_contain_text("final label relevant")
    check.refresh_from_db()
    assert check.status == "not_certified" and check.looked_at == most + 1

    page.goto(f"{live_server.url}/queries/{query.pk}/")
    expect(page.locator("#completeness-status")).to_have_text("not yet")
    expect(page.locator("#completeness-next")).to_contain_text(
        f"decided after {most + 1} of its {len(sample)} sampled pairs: they had met {most + 1} positive"
    )
    expect(page.locator("#completeness-bound")).to_contain_text(f"({most + 1} looked at: decided early)")
    page.locator("#completeness-box").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "completeness-decided-early.png"), full_page=False)
