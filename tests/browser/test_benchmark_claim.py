"""Issue 51 in a real Chromium: staff draw a benchmark check from the dashboard; an annotator labels its pairs from
two queries' pages (ranking "completeness check") with the keys; the other annotator's looks decide it; the claim
shows on the dashboard and in a release's card."""

from pathlib import Path

import pytest
from django.contrib.auth.models import User
from playwright.sync_api import expect

from annotator.completeness import sampled
from annotator.labels import LabelChange, set_labels
from annotator.models import CheckImage, CompletenessCheck, Judgment, Label, Query
from annotator.releases import publish as releases
from search.facade import search
from tests.browser.pages import log_in

pytestmark = pytest.mark.django_db(transaction=True)


def labeled(query, ann, bob):
    """Ann's judgments down the top 20, every third relevant; Bob agrees on her positives (confirmed)."""
    top = [hit.image_id for hit in search(text=query.text, k=20)]
    changes = [LabelChange(i, "relevant" if n % 3 == 0 else "not_relevant") for n, i in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    relevant = [change for change in changes if change.value == "relevant"]
    set_labels(query_id=query.pk, changes=relevant, user=bob, source="keyboard")


def test_a_benchmark_check_drawn_from_the_dashboard_labeled_from_two_queries_pages(
    page, live_server, labeling, artifacts, settings, tmp_path
):
    settings.QUIRE_DATA_DIR = tmp_path / "data"
    ann = labeling["annotator"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    first = Query.objects.get(pk=labeling["query"].pk)
    second = Query.objects.create(text="Flamingo feeding with its head upside down")
    for query in (first, second):
        labeled(query, ann, bob)

    log_in(page, live_server, "boss", "pw-boss-1", "/dashboard/")
    expect(page.locator("#benchmark-none")).to_have_text("No benchmark check yet.")
    form = page.locator("#benchmark-form")
    form.locator('select[name="target_recall"]').select_option("0.8")
    form.locator('select[name="confidence"]').select_option("0.9")
    page.click("#draw-benchmark")
    page.wait_for_url("**/dashboard/#benchmark")
    expect(page.locator("#benchmark-status")).to_contain_text("checking")
    expect(page.locator("#benchmark-claim")).to_contain_text("over the frames of 2 queries")
    check = CompletenessCheck.objects.filter(claim="benchmark").get()
    pairs = {query.pk: list(CheckImage.objects.filter(completeness_check=check, query=query).order_by("position")
                            .values_list("image_id", flat=True)) for query in (first, second)}  # fmt: skip
    assert all(pairs.values()), "the pooled sample holds pairs of both queries"
    page.locator("#benchmark").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "benchmark-checking.png"), full_page=True)
    # While it is open the button waits, and says for what. A tab loaded before the draw still has it pressable:
    # its other target is refused in the panel, in view, and nothing is drawn (issue 64: a message at the top of
    # the page, 830 px above the view, and the target asked for silently dropped).
    expect(page.locator("#draw-benchmark")).to_be_disabled()
    expect(page.locator("#benchmark-open")).to_have_text(f"Another can be drawn once benchmark check {check.ordinal} "
                                                         "is decided.")  # fmt: skip
    page.evaluate("document.getElementById('draw-benchmark').disabled = false")
    form.locator('select[name="target_recall"]').select_option("0.95")
    page.click("#draw-benchmark")
    refusal = page.locator("#benchmark-error")
    expect(refusal).to_contain_text(f"Benchmark check {check.ordinal} is open (target 80% at 90% confidence")
    expect(refusal).to_contain_text("Nothing was drawn for the target 95% at 95% confidence over every query")
    expect(refusal).to_be_in_viewport()
    page.screenshot(path=str(artifacts / "benchmark-draw-while-open.png"))
    assert CompletenessCheck.objects.filter(claim="benchmark").count() == 1

    # Ann labels each query's pairs from its page, in the check ranking, with the keys.
    page.context.clear_cookies()
    for query in (first, second):
        url = f"/queries/{query.pk}/?ranking=check&size=200"  # one page holds the query's whole share
        if query is first:
            log_in(page, live_server, "ann", "pw-ann-1", url)
        else:
            page.goto(f"{live_server.url}{url}")
        mine = set(Judgment.objects.filter(query=query, annotator=ann).values_list("image_id", flat=True))
        wanted = [image_id for image_id in pairs[query.pk] if image_id not in mine]
        assert len(wanted) <= 200, "the pooled sample's share of one query fits one page of 200"
        expect(page.locator(".tile")).to_have_count(len(wanted))
        shown = [int(i) for i in page.locator(".tile").evaluate_all("ts => ts.map(t => t.dataset.imageId)")]
        start = sampled.own_place(check, query, ann.pk, len(wanted))
        assert shown == wanted[start:] + wanted[:start]  # the pooled sample's order, from Ann's own place in it
        if query is first:
            page.screenshot(path=str(artifacts / "benchmark-labeling.png"), full_page=False)
        for _ in wanted:
            page.keyboard.press("0")
            page.keyboard.press("ArrowRight")
        expect(page.locator("#save-status")).to_have_text("All changes saved")
        assert Judgment.objects.filter(query=query, annotator=ann, image_id__in=wanted).count() == len(wanted)
    assert (
        CompletenessCheck.objects.filter(claim="benchmark").get().status == "checking"
    )  # each pair wants a second look

    for query in (first, second):  # Bob's looks, from his own pages: his last write decides the check
        mine = set(Judgment.objects.filter(query=query, annotator=bob).values_list("image_id", flat=True))
        changes = [LabelChange(i, "not_relevant") for i in pairs[query.pk] if i not in mine]
        set_labels(query_id=query.pk, changes=changes, user=bob, source="keyboard")
    check.refresh_from_db()
    assert check.status == "certified" and check.recall_lower_bound >= 0.8
    assert not Label.objects.filter(image_id__in=pairs[first.pk], query=first, value="relevant").exists()

    page.context.clear_cookies()
    log_in(page, live_server, "boss", "pw-boss-1", "/dashboard/")
    claim = page.locator("#benchmark-claim")
    expect(claim).to_contain_text("Micro-recall is at least 80% with 90% confidence over the frames of 2 queries")
    expect(claim).to_contain_text("positives outside the frames: not bounded")
    expect(page.locator("#benchmark-bound")).to_contain_text("Lower bound of micro-recall")
    expect(page.locator("#benchmark-queries tbody tr")).to_have_count(2)
    page.locator("#benchmark").scroll_into_view_if_needed()
    page.screenshot(path=str(artifacts / "benchmark-certified.png"), full_page=True)
    sentence = claim.inner_text()

    # A release states it in its card.
    releases.create("v1")
    page.goto(f"{live_server.url}/releases/")
    with page.expect_download() as download:
        page.locator('tr[data-release="v1"]').get_by_label("download README.md").click()
    card = Path(download.value.path()).read_text(encoding="utf-8")
    assert f"Benchmark completeness: {sentence}" in card
    page.set_content(f"<pre style='white-space: pre-wrap; font: 13px monospace'>{_escaped(card)}</pre>")
    page.screenshot(path=str(artifacts / "benchmark-release-card.png"), full_page=True)


def _escaped(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
