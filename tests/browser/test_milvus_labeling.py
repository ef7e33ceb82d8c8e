"""The labeling page on the Milvus backend, in Chromium: the grid FAISS flat shows, keyboard labels that are
stored, and a vector database that goes away said where the results would be."""

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from annotator.models import Label, LabelValue
from search import engine
from tests.browser.pages import log_in, tile

pytestmark = pytest.mark.django_db(transaction=True)


def grid(page) -> list[int]:
    expect(page.locator(".tile")).to_have_count(50)
    return [int(i) for i in page.locator(".tile").evaluate_all("tiles => tiles.map(t => t.dataset.imageId)")]


def test_the_labeling_page_on_milvus_shows_faiss_flats_grid_and_saves_labels(
    page, live_server, labeling, settings, tmp_path, artifacts
):
    query = labeling["query"]
    log_in(page, live_server, "ann", "pw-ann-1", f"/queries/{query.pk}/")
    by_faiss = grid(page)

    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")
    call_command("build_index", "--backend", "milvus")
    settings.QUIRE_VECTOR_BACKEND = "milvus"
    try:
        page.reload()
        assert grid(page) == by_faiss
        expect(tile(page, 0)).to_have_class("tile selected")
        page.keyboard.press("Enter")  # relevant
        page.keyboard.press("ArrowRight")
        page.keyboard.press("0")  # not relevant
        expect(tile(page, 0)).to_have_attribute("data-label", "relevant")
        expect(tile(page, 1)).to_have_attribute("data-label", "not_relevant")
        expect(page.locator("#save-status")).to_have_text("All changes saved")
        stored = dict(Label.objects.filter(query=query).values_list("image_id", "value"))
        assert stored == {by_faiss[0]: LabelValue.RELEVANT, by_faiss[1]: LabelValue.NOT_RELEVANT}
        page.screenshot(path=str(artifacts / "milvus-labeling.png"), full_page=True)

        # The database goes away: the page says so where the grid was, naming the setting.
        settings.QUIRE_MILVUS_URI = "http://127.0.0.1:1"
        page.reload()
        refusal = page.locator("#results-error")
        expect(refusal).to_contain_text("The vector database at QUIRE_MILVUS_URI=http://127.0.0.1:1")
        expect(page.locator(".tile")).to_have_count(0)
        page.screenshot(path=str(artifacts / "milvus-unreachable.png"), full_page=True)
    finally:
        engine.forget()
