"""A ranking that learns, in real Chromium: choose it, label, watch the unlabeled tiles re-rank, "more
like this", and an uploaded example. Every expectation is the server's own ranking from the stored
labels (annotator.labeling.grid.candidates), so a page that showed stale or made-up tiles fails."""

import re

import pytest
from playwright.sync_api import expect

from annotator.labeling.grid import candidates
from annotator.models import Label, PreLabel, QueryExample, RerankJob
from search.facade import search
from tests.browser.pages import log_in, tile

pytestmark = pytest.mark.django_db(transaction=True)


def shown(page) -> list[int]:
    return [int(i) for i in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.imageId)")]


def test_learn_from_my_labels_re_ranks_below_the_view_and_on_load_more(
    page, live_server, labeling, settings, artifacts
):
    settings.QUIRE_RERANK_EVERY = 5
    query = labeling["query"]
    page.set_viewport_size({"width": 1100, "height": 700})
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    page.select_option("#ranking", "feedback")
    page.wait_for_url("**ranking=feedback**")
    expect(page.locator("#rerank-status")).to_have_text("learning from your labels")
    expect(page.locator(".tile")).to_have_count(50)
    first = shown(page)
    assert first == [hit.image_id for hit in candidates(query, viewer=labeling["annotator"], strategy="feedback", k=50)]
    for key in "00001":  # the first four not relevant, the fifth relevant
        page.keyboard.press(key)
        page.keyboard.press("ArrowRight")
    expect(page.locator("#rerank-status")).to_contain_text("re-ranked", timeout=15_000)
    assert Label.objects.filter(query=query).count() == 5
    now = shown(page)
    # The tiles in view stayed where they were; those below were replaced by the ranking that learned.
    in_view = page.locator(".tile").evaluate_all(
        "tiles => tiles.filter(t => t.getBoundingClientRect().top <= window.innerHeight).length"
    )
    assert 5 < in_view < 50 and now[:in_view] == first[:in_view] and len(now) == 50
    kept = now[:in_view]
    below = now[in_view:]
    expected = [
        hit.image_id
        for hit in candidates(query, viewer=labeling["annotator"], strategy="feedback", k=len(below), exclude_ids=kept)
    ]
    # The server's ranking from the stored labels, in the page. (The tiny model's random weights put every image
    # in one blur, so here the labels need not change the order: tests/search shows learning on shaped worlds.)
    assert below == expected
    page.screenshot(path=str(artifacts / "labeling-feedback.png"))

    page.keyboard.press("s")  # the rest of the page: not relevant
    expect(page.locator("#save-status")).to_contain_text("Submitted")
    page.keyboard.press("m")
    expected = candidates(query, viewer=labeling["annotator"], strategy="feedback", k=50)
    # The tiny model cannot tell its images apart, so no look-alikes stack (search/lookalikes.py): a whole batch.
    assert len(expected) == 50 and not any(hit.stack for hit in expected)
    expect(page.locator(".tile")).to_have_count(50 + len(expected))
    more = shown(page)[50:]
    assert more == [hit.image_id for hit in expected]  # every label counted
    page.reload()
    expect(page.locator("#ranking")).to_have_value("feedback")  # remembered for this query


def test_more_like_this_and_an_uploaded_example(page, live_server, labeling, artifacts):
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    target = shown(page)[3]
    for _ in range(3):
        page.keyboard.press("ArrowRight")
    page.keyboard.press("l")  # more like the selected image
    page.wait_for_url("**ranking=image**")
    expect(page.locator(".chip.like")).to_have_text(f"like #{target}×")
    expect(page.locator(".tile")).to_have_count(50)
    assert shown(page) == [
        hit.image_id
        for hit in candidates(query, viewer=labeling["annotator"], strategy="image", example_ids=[target], k=50)
    ]
    assert shown(page)[0] == target  # nothing is closer to an image than itself

    # The detail pane's button does the same for another image.
    other = shown(page)[1]
    tile(page, 1).click(modifiers=["Shift"])  # select without labeling
    page.locator('#detail [data-action="like"]').click()
    page.wait_for_url(f"**like={other}**")
    assert shown(page)[0] == other

    # Upload an example: kept with the query, and the ranking becomes text + examples.
    photo = sorted(labeling["images"].rglob("*.jpg"))[7]
    page.set_input_files('#upload-example input[type="file"]', str(photo))
    page.fill('#upload-example input[name="note"]', "a skimmer skimming")
    page.click('#upload-example button[type="submit"]')
    page.wait_for_url("**ranking=fusion**")
    # CLIP runs in the background, not in the upload's request: the page says so, then reloads with it.
    expect(page.locator("#examples-embedding")).to_have_count(0, timeout=30_000)
    example = QueryExample.objects.get(query=query)
    assert example.upload and example.vector is not None and example.note == "a skimmer skimming"
    expect(page.locator(f'.examples img[alt="uploaded example {example.pk}"]')).to_be_visible()
    # The tiles come once the page has reloaded itself with the example embedded.
    expect(page.locator(".tile")).to_have_count(50, timeout=15_000)
    assert shown(page) == [
        hit.image_id for hit in candidates(query, viewer=labeling["annotator"], strategy="fusion", k=50)
    ]
    page.screenshot(path=str(artifacts / "labeling-uploaded-example.png"), full_page=True)


def test_a_judge_panels_prelabel_is_confirmed_with_one_key(page, live_server, labeling):
    query = labeling["query"]
    top = [hit.image_id for hit in search(text=query.text, k=3)]
    job = RerankJob.objects.create(query=query, method="judges", model="tiny-vlm", top=3, status="done")
    for rank, (image_id, value) in enumerate(zip(top, ["accept", "reject", "abstain"], strict=True), start=1):
        PreLabel.objects.create(query=query, image_id=image_id, job=job, value=value, confidence=0.8, clip_rank=rank)
    log_in(page, live_server, next_url=f"/queries/{query.pk}/")
    expect(tile(page, 0).locator(".prelabel")).to_have_text("panel: accept 80%")
    # Whole at the default tile size, inside its tile.
    badge, box = tile(page, 0).locator(".prelabel").bounding_box(), tile(page, 0).bounding_box()
    assert box["x"] <= badge["x"] and badge["x"] + badge["width"] <= box["x"] + box["width"]
    assert tile(page, 0).locator(".prelabel").evaluate("b => b.scrollWidth <= b.clientWidth")
    assert not Label.objects.exists()  # shown, not counted
    page.keyboard.press("c")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("c")
    # The two saves answered first: otherwise their "All changes saved" may replace the next message
    # before it is read (seen in CI on a loaded machine).
    expect(page.locator("#save-status")).to_have_text("All changes saved", timeout=10_000)
    page.keyboard.press("ArrowRight")
    page.keyboard.press("c")  # abstain: nothing to confirm
    expect(page.locator("#save-status")).to_have_text("The judge panel has no verdict on this image.")
    stored = dict(Label.objects.filter(query=query).values_list("image_id", "value"))
    assert stored == {top[0]: "relevant", top[1]: "not_relevant"}


def stack_behind_the_first_tile(monkeypatch, query, count: int) -> list[int]:
    """The ranking is the server's (search.facade.next_batch) with `count` look-alikes put behind its first
    image, as search/batches.py does behind a crowd the annotator called not relevant: what is tested is the
    page, its saves and its history. Returns the look-alikes (filled in at the first batch)."""
    from annotator.labeling import grid as labeling_module
    from search.facade import Hit

    real = labeling_module.next_batch
    look_alikes: list[int] = []

    def with_a_stack(**arguments):
        hits = real(**arguments)
        if not look_alikes:
            shown_ids = {hit.image_id for hit in hits}
            rest = [h.image_id for h in search(text=query.text, k=120) if h.image_id not in shown_ids]
            look_alikes.extend(rest[-count:])
        waiting = tuple(i for i in look_alikes if i not in set(arguments["exclude_image_ids"]))
        first = hits[0]
        return [Hit(first.image_id, first.score, first.taxon_id, first.source, waiting), *hits[1:]]

    monkeypatch.setattr(labeling_module, "next_batch", with_a_stack)
    return look_alikes


def test_a_stack_of_look_alikes_is_labeled_with_one_key_and_opened_with_e(
    page, live_server, labeling, monkeypatch, artifacts
):
    from annotator.models import Judgment, LabelEvent

    query, annotator = labeling["query"], labeling["annotator"]
    look_alikes = stack_behind_the_first_tile(monkeypatch, query, 3)
    page.set_viewport_size({"width": 1280, "height": 800})
    log_in(page, live_server, next_url=f"/queries/{query.pk}/?ranking=feedback")
    leader = tile(page, 0)
    expect(leader).to_have_class(re.compile(r"\bstacked\b"))
    expect(leader.locator(".stack-badge")).to_have_text("+3 look-alikes")
    expect(page.locator("#detail .stack-note")).to_contain_text("3 look-alikes wait behind this image")
    page.screenshot(path=str(artifacts / "labeling-stack.png"))
    leader_id = int(leader.get_attribute("data-image-id"))

    page.keyboard.press("0")  # one key: the stack's four images, each its own judgment and history
    expect(page.locator("#save-status")).to_have_text("All changes saved", timeout=15_000)
    stored = dict(Judgment.objects.filter(query=query, annotator=annotator).values_list("image_id", "value"))
    assert stored == {image_id: "not_relevant" for image_id in [leader_id, *look_alikes]}
    assert set(LabelEvent.objects.filter(query=query).values_list("image_id", flat=True)) == {leader_id, *look_alikes}

    page.keyboard.press("z")  # undo takes back the whole stack
    expect(page.locator("#save-status")).to_have_text("All changes saved", timeout=15_000)
    assert not Judgment.objects.filter(query=query).exists()

    page.keyboard.press("e")  # open the stack: the look-alikes become tiles right after it
    expect(page.locator(".tile.look-alike")).to_have_count(3)
    assert shown(page)[1:4] == look_alikes
    expect(leader).not_to_have_class(re.compile(r"\bstacked\b"))
    page.keyboard.press("ArrowRight")
    page.keyboard.press("1")  # now each is labeled on its own
    expect(page.locator("#save-status")).to_have_text("All changes saved", timeout=15_000)
    stored = dict(Judgment.objects.filter(query=query, annotator=annotator).values_list("image_id", "value"))
    assert stored == {look_alikes[0]: "relevant"}
    page.screenshot(path=str(artifacts / "labeling-stack-open.png"))


def test_a_key_on_a_large_stack_asks_for_the_key_again_first(page, live_server, labeling, monkeypatch, artifacts):
    from annotator.models import Judgment

    query = labeling["query"]
    look_alikes = stack_behind_the_first_tile(monkeypatch, query, 25)
    log_in(page, live_server, next_url=f"/queries/{query.pk}/?ranking=feedback")
    leader_id = int(tile(page, 0).get_attribute("data-image-id"))
    expect(tile(page, 0).locator(".stack-badge")).to_have_text("+25 look-alikes")
    page.keyboard.press("0")
    status = page.locator("#save-status")
    expect(status).to_contain_text("25 look-alikes wait behind this image: press the same key again to label all 26")
    page.screenshot(path=str(artifacts / "labeling-stack-ask.png"))
    page.wait_for_timeout(300)
    assert not Judgment.objects.filter(query=query).exists()  # nothing labeled by the first key
    page.keyboard.press("ArrowRight")  # moving away forgets the question
    page.keyboard.press("ArrowLeft")
    page.keyboard.press("0")
    expect(status).to_contain_text("press the same key again")
    page.keyboard.press("0")
    expect(status).to_have_text("All changes saved", timeout=15_000)
    stored = dict(Judgment.objects.filter(query=query).values_list("image_id", "value"))
    assert stored == {image_id: "not_relevant" for image_id in [leader_id, *look_alikes]}


def test_the_like_chips_x_goes_back_to_the_ranking_before(page, live_server, labeling):
    """`l` from "learn from my labels", then the chip's ×: back to learning, not an empty ranking by
    examples the query does not have, and no such ranking remembered for the next visit."""
    query = labeling["query"]
    log_in(page, live_server, next_url=f"/queries/{query.pk}/?ranking=feedback")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("l")
    page.wait_for_url("**ranking=image**")
    page.locator(".chip.like .remove").click()
    page.wait_for_url("**ranking=feedback**")
    expect(page.locator(".chip.like")).to_have_count(0)
    expect(page.locator(".tile")).to_have_count(50)
    page.goto(f"{live_server.url}/queries/{query.pk}/")  # the next visit: the ranking chosen last that works
    expect(page.locator("#ranking")).to_have_value("feedback")
