"""A researcher uploads a run in Chromium: the upload answers 202 at once with a status page that polls,
and the report opens by itself when the scoring (here in the server's background thread) is done."""

import threading

import pytest
from django.contrib.auth import get_user_model

from evaluation import scoring
from tests.evaluation.test_evaluate import QRELS, QUERIES
from tests.evaluation.test_pages import RUN_A

from .pages import double_click, log_in

pytestmark = pytest.mark.django_db(transaction=True)


def upload(page, name, run):
    page.fill('input[name="name"]', name)
    for field, text in (("run", run), ("qrels", QRELS), ("queries", QUERIES)):
        page.set_input_files(
            f'input[name="{field}"]', files=[{"name": f"{field}.csv", "mimeType": "text/csv", "buffer": text.encode()}]
        )
    with page.expect_response(lambda r: r.request.method == "POST") as answer:
        page.click("text=Score it")
    return answer.value


def test_an_upload_answers_at_once_and_the_page_follows_it_to_the_report(page, live_server, artifacts, monkeypatch):
    get_user_model().objects.create_superuser("boss", "b@example.org", "pw-boss-1")
    log_in(page, live_server, "boss", "pw-boss-1", next_url="/evaluation/")
    # Hold the scoring until the status page has been seen (the thread runs in this process).
    release = threading.Event()
    real_evaluate = scoring._evaluate
    monkeypatch.setattr(scoring, "_evaluate", lambda job: release.wait(60) and real_evaluate(job))

    answer = upload(page, "ViT-H/14 zero-shot", RUN_A)
    assert answer.status == 202
    status = page.locator("#scoring")
    assert status.get_attribute("data-status") in ("queued", "running")
    assert page.url.endswith(f"/evaluation/scorings/{scoring.Scoring.objects.get().pk}/")  # a reload asks again
    status.get_by_text("This page").wait_for()
    page.screenshot(path=str(artifacts / "evaluation-scoring.png"))
    release.set()
    page.wait_for_url("**/evaluation/reports/*/", timeout=30_000)  # htmx's poll, sent on by HX-Redirect
    assert page.locator("h1").inner_text() == "ViT-H/14 zero-shot"
    assert page.locator("#overall").is_visible()
    page.screenshot(path=str(artifacts / "evaluation-report.png"), full_page=True)

    # A broken run: the status page says which line to fix, and polling stops.
    page.goto(f"{live_server.url}/evaluation/")
    assert upload(page, "broken", "query_id,image_id,score\n1,10,3\n1,10,2\n").status == 202
    error = page.locator("#scoring-error")
    error.wait_for(timeout=30_000)
    assert "run.csv, line 3: query 1, image 10 is already ranked on line 2" in error.inner_text()
    assert page.locator("#scoring").get_attribute("hx-trigger") is None
    page.screenshot(path=str(artifacts / "evaluation-scoring-failed.png"))


def test_a_double_click_on_score_it_scores_the_run_once(page, live_server, monkeypatch):
    get_user_model().objects.create_superuser("boss", "b@example.org", "pw-boss-1")
    log_in(page, live_server, "boss", "pw-boss-1", next_url="/evaluation/")
    release = threading.Event()
    real_evaluate = scoring._evaluate
    monkeypatch.setattr(scoring, "_evaluate", lambda job: release.wait(60) and real_evaluate(job))
    page.fill('input[name="name"]', "twice?")
    for field, text in (("run", RUN_A), ("qrels", QRELS), ("queries", QUERIES)):
        page.set_input_files(
            f'input[name="{field}"]', files=[{"name": f"{field}.csv", "mimeType": "text/csv", "buffer": text.encode()}]
        )
    assert double_click(page, "Score it") == 1  # the second click sent nothing
    page.wait_for_url("**/evaluation/scorings/*/")
    release.set()
    page.wait_for_url("**/evaluation/reports/*/", timeout=30_000)
    assert scoring.Scoring.objects.count() == 1
