"""The map of the collection in a real Chromium: lasso a region, the grid shows exactly the images inside it in
ranking order, labels given with the keys recolour the map, a reload keeps the selection."""

import numpy as np
import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotator.models import Label
from search import layout
from search.facade import score_images, search
from search.polygon import parse
from search.spec import configured_spec
from tests.browser.pages import log_in, tile

pytestmark = pytest.mark.django_db(transaction=True)


def test_lasso_filters_the_grid_and_labels_recolour_the_map(page, live_server, labeling, settings, artifacts):
    settings.QUIRE_MAP_SAMPLE = 80
    call_command("map_layout")
    stored = layout.load(configured_spec().name)
    query = labeling["query"]
    page.set_viewport_size({"width": 1400, "height": 1000})
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    page.click("#map-panel summary")
    expect(page.locator("#map-panel")).to_have_attribute("data-ready", "1")
    page.screenshot(path=str(artifacts / "map-open.png"), full_page=True)

    # A lasso around one of the map's clusters (the point nearest the middle, and its neighbours), drawn with the
    # mouse as a user would: a rough circle.
    page.click('[data-mode="lasso"]')
    box = page.locator(".map-overlay").bounding_box()
    middle = stored.xy[np.argmin(np.linalg.norm(stored.xy - np.median(stored.xy, axis=0), axis=1))]
    centre = page.evaluate("([x, y]) => window.quireMap.toScreen(x, y)", [float(middle[0]), float(middle[1])])
    radius = min(box["width"], box["height"]) * 0.12
    angles = np.linspace(0, 2 * np.pi, 40)
    path = [(box["x"] + centre[0] + radius * np.cos(a), box["y"] + centre[1] + radius * np.sin(a)) for a in angles]
    page.mouse.move(*path[0])
    page.mouse.down()
    for point in path[1:]:
        page.mouse.move(*point, steps=2)
    with page.expect_navigation():
        page.mouse.up()
    assert "within=" in page.url
    expect(page.locator("#map-panel")).to_have_attribute("data-ready", "1")

    # The grid holds exactly the stored points inside the polygon the address carries, in the text ranking's order.
    within = page.locator("#map-panel").get_attribute("data-within")
    inside = set(stored.image_ids[parse(within).contains(stored.xy)].tolist())
    assert 3 <= len(inside) < 120
    shown = [int(i) for i in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.imageId)")]
    assert set(shown) == inside and len(shown) == len(inside)
    scores = score_images(text=query.text, image_ids=shown)
    assert list(scores) == sorted(scores, reverse=True)
    expect(page.locator("#map-panel summary")).to_contain_text(f"selection: {len(inside)} images")
    assert page.evaluate("window.quireMap.selectedCount()") == len(inside)

    # Label with the keys: the first tile (selected on arrival) relevant, the second not relevant; once stored,
    # the map recolours.
    page.keyboard.press("1")
    page.keyboard.press("ArrowRight")
    page.keyboard.press("0")
    expect(page.locator("#save-status")).to_have_text("All changes saved")
    assert dict(Label.objects.values_list("image_id", "value")) == {shown[0]: "relevant", shown[1]: "not_relevant"}
    codes = page.evaluate(
        "(ids) => ids.map((id) => window.quireMap.codes[window.quireMap.rowOf.get(id)])", [shown[0], shown[1], shown[2]]
    )
    assert codes == [1, 2, 0]
    expect(tile(page, 1)).to_have_class("tile selected")  # the grid's selection is ringed on the map too
    assert page.evaluate("window.quireMap.marked") == str(shown[1])
    page.screenshot(path=str(artifacts / "map-lasso.png"), full_page=True)

    # A reload keeps the selection, and the map shows the stored labels.
    page.reload()
    expect(page.locator("#map-panel")).to_have_attribute("data-ready", "1")
    again = [int(i) for i in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.imageId)")]
    assert again == shown
    assert page.evaluate("window.quireMap.selectedCount()") == len(inside)
    codes = page.evaluate("(ids) => ids.map((id) => window.quireMap.codes[window.quireMap.rowOf.get(id)])", shown[:2])
    assert codes == [1, 2]

    # "Rest of the selection: not relevant": one change for every unlabeled image inside, that z undoes.
    page.click('[data-action="rest-not-relevant"]')
    rest = len(inside) - 2
    expect(page.locator("#map-status")).to_have_text(
        f"{rest} images of the selection marked not relevant (z undoes it)."
    )
    assert Label.objects.filter(value="not_relevant").count() == rest + 1
    assert page.evaluate("window.quireMap.codes.filter((c) => c === 2).length") == rest + 1
    expect(tile(page, 5)).to_have_attribute("data-label", "not_relevant")
    page.keyboard.press("z")
    expect(tile(page, 5)).to_have_attribute("data-label", "")
    # The map recolours once the server has stored the undo: then the database holds it.
    for _ in range(100):  # (wait_for_function's string would be eval'd, which the page's CSP refuses)
        if page.evaluate("window.quireMap.codes.filter((c) => c === 2).length") == 1:
            break
        page.wait_for_timeout(100)
    assert dict(Label.objects.exclude(value="").values_list("image_id", "value")) == {
        shown[0]: "relevant",
        shown[1]: "not_relevant",
    }

    # Hovering a point shows its thumbnail; clicking it selects its tile in the grid.
    target = shown[3]
    spot = page.evaluate(
        "(id) => { const m = window.quireMap, r = m.rowOf.get(id); return m.toScreen(m.xs[r], m.ys[r]); }", target
    )
    box = page.locator(".map-overlay").bounding_box()
    page.click('[data-mode="pan"]')
    page.mouse.move(box["x"] + spot[0], box["y"] + spot[1])
    expect(page.locator(".map-hover")).to_be_visible()
    assert "/thumb" in page.locator(".map-hover").get_attribute("src")
    # Colour by the ranking's score: every point gets its rank among the scores.
    page.select_option('[data-action="colour"]', "score")
    expect(page.locator("#map-status")).to_contain_text("by this ranking's score")
    assert page.evaluate("window.quireMap.byScore") is True
    page.screenshot(path=str(artifacts / "map-by-score.png"), full_page=True)
    page.select_option('[data-action="colour"]', "labels")
    # The scores on the tiles, on demand.
    expect(tile(page, 0).locator(".score")).to_be_hidden()
    page.check("#show-scores")
    expect(tile(page, 0).locator(".score")).to_be_visible()
    page.mouse.click(box["x"] + spot[0], box["y"] + spot[1])
    selected = page.locator(".tile.selected").get_attribute("data-image-id")
    picked = page.evaluate("window.quireMap.marked")
    assert selected == str(picked)  # the point nearest the click (a neighbour may sit on top of it)

    # A lasso that crosses itself is refused where the user is looking, and nothing changes.
    page.click('[data-mode="lasso"]')
    x0, y0 = box["x"] + 100, box["y"] + 100
    page.mouse.move(x0, y0)
    page.mouse.down()
    for x, y in [(x0 + 150, y0 + 150), (x0 + 150, y0), (x0, y0 + 150), (x0 + 5, y0 + 5)]:
        page.mouse.move(x, y, steps=4)
    page.mouse.up()
    expect(page.locator("#map-status")).to_contain_text("crosses itself")
    assert "within=" + within.split(",")[0] in page.url or within.split(",")[0] in page.url
    page.screenshot(path=str(artifacts / "map-refused.png"), full_page=True)

    # Clear selection: the whole ranking again.
    with page.expect_navigation():
        page.click('[data-action="clear"]')
    assert "within=" not in page.url
    expect(page.locator(".tile")).to_have_count(50)


def test_an_image_dropped_on_the_search_box_ranks_like_it(page, live_server, labeling, artifacts):
    from annotator.models import QueryExample  # only this test reads examples

    query = labeling["query"]
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    jpeg = (labeling["images"] / "Laridae" / "1.jpg") if (labeling["images"] / "Laridae" / "1.jpg").exists() else None
    jpeg = jpeg or next(labeling["images"].rglob("*.jpg"))
    data = list(jpeg.read_bytes())
    page.evaluate(
        """([bytes, name]) => {
          const file = new File([new Uint8Array(bytes)], name, { type: "image/jpeg" });
          const transfer = new DataTransfer();
          transfer.items.add(file);
          const bar = document.querySelector(".searchbar");
          bar.dispatchEvent(new DragEvent("dragover", { dataTransfer: transfer, bubbles: true, cancelable: true }));
          bar.dispatchEvent(new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true }));
        }""",
        [data, jpeg.name],
    )
    page.wait_for_url("**ranking=image**")
    example = QueryExample.objects.get(query=query)
    assert example.upload and example.image_id is None
    page.screenshot(path=str(artifacts / "dropped-image.png"), full_page=True)

    # A file that is no image is refused on the page with its reason, and nothing is stored.
    page.evaluate(
        """() => {
          const transfer = new DataTransfer();
          transfer.items.add(new File(["hello"], "notes.txt", { type: "text/plain" }));
          const drop = new DragEvent("drop", { dataTransfer: transfer, bubbles: true, cancelable: true });
          document.querySelector(".searchbar").dispatchEvent(drop);
        }"""
    )
    expect(page.locator("#save-status")).to_contain_text("notes.txt is not an image")
    assert QueryExample.objects.filter(query=query).count() == 1


def test_staff_map_of_the_whole_collection_counts_a_box(page, live_server, labeling, settings, artifacts):
    settings.QUIRE_MAP_SAMPLE = 80
    call_command("map_layout")
    query = labeling["query"]
    from annotator.labels import LabelChange, set_labels  # only this test writes labels

    top = [hit.image_id for hit in search(text=query.text, k=4)]
    set_labels(
        query_id=query.pk, changes=[LabelChange(i, "relevant") for i in top], user=labeling["annotator"], source="api"
    )
    page.set_viewport_size({"width": 1300, "height": 900})
    log_in(page, live_server, "boss", "pw-boss-1", "/dashboard/map/")
    expect(page.locator("#map-panel")).to_have_attribute("data-ready", "1")
    page.click('[data-mode="box"]')
    box = page.locator(".map-overlay").bounding_box()
    page.mouse.move(box["x"] + 2, box["y"] + 2)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] - 2, box["y"] + box["height"] - 2, steps=5)
    page.mouse.up()
    expect(page.locator("#map-status")).to_have_text(
        "120 images selected: 4 relevant to a query, 0 labeled and not relevant, 116 with no label."
    )
    page.screenshot(path=str(artifacts / "map-collection.png"), full_page=True)
