"""The rerank job from the labeling page: queued, run, resumed after a failure without asking again,
and its result as a ranking of the page."""

import base64
import math
import re

import pytest
from django.urls import reverse

from annotator.labeling.grid import RANKINGS
from annotator.methods.registry import MODEL_METHODS, MODEL_RANKINGS, page_ranking
from annotator.methods.rerank import run_job, start_job
from annotator.models import RerankJob, RerankScore
from tests.lmm.server import completion, p_yes

pytestmark = pytest.mark.django_db


def tile_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'data-image-id="(\d+)"', html)]


def test_the_page_starts_a_rerank_shows_its_progress_and_ranks_by_it(
    client,
    labeling,
    model,
    django_capture_on_commit_callbacks,
):
    query = labeling["query"]
    client.force_login(labeling["annotator"])
    with django_capture_on_commit_callbacks(execute=True):  # no broker in the tests: the task runs eagerly
        response = client.post(reverse("start-rerank", args=[query.pk]))
    assert response.status_code == 200
    job = RerankJob.objects.get()
    assert (job.status, job.done, job.asked, job.model) == ("done", 100, 100, "tiny-vlm")
    assert (job.prompt_tokens, job.completion_tokens) == (100 * 1000, 100)  # as the server's usage said
    status = client.get(reverse("rerank-status", args=[query.pk])).content.decode()
    assert "done" in status and "?ranking=rerank" in status and "every 2s" not in status
    html = client.get(reverse("label", args=[query.pk]), {"ranking": "rerank"}).content.decode()
    expected = list(
        RerankScore.objects.filter(query=query).order_by("-score", "clip_rank").values_list("image_id", flat=True)
    )
    assert tile_ids(html) == expected[:50] and "the vision model&#x27;s rerank" in html


def test_a_failed_job_says_why_and_resumes_without_asking_again(labeling, model):
    query = labeling["query"]
    calls = {"n": 0}

    def flaky(request):
        calls["n"] += 1
        if calls["n"] > 40:
            return 500, {"error": {"message": "out of memory"}}, {}
        url = request["messages"][0]["content"][1]["image_url"]["url"]
        p = p_yes(base64.b64decode(url.split(",", 1)[1]))
        return 200, completion([("Yes", math.log(p)), ("No", math.log(1 - p))]), {}

    model.answer = flaky
    job = RerankJob.objects.create(query=query, model="tiny-vlm", top=100)
    job = run_job(job.pk)
    assert job.status == "failed" and "answered 500: out of memory" in job.error
    assert not RerankScore.objects.exists()
    sent = len(model.requests)
    model.answer = lambda request: (200, completion([("Yes", -0.5), ("No", -1.0)]), {})
    job = run_job(job.pk)  # the worker again (a retry, or after a restart)
    assert job.status == "done" and job.done == 100
    assert len(model.requests) - sent == 100 - 40 == job.asked  # the first 40 answers came from the cache


def test_no_model_configured_is_a_409_with_what_to_set(client, labeling, settings):
    settings.QUIRE_LMM_BASE_URL = ""
    client.force_login(labeling["annotator"])
    response = client.post(reverse("start-rerank", args=[labeling["query"].pk]))
    assert response.status_code == 409 and "QUIRE_LMM_BASE_URL" in response.content.decode()
    assert not RerankJob.objects.exists()
    with pytest.raises(Exception, match="QUIRE_LMM_BASE_URL"):
        start_job(labeling["query"])


def test_the_side_pane_offers_each_registered_method_and_refuses_any_other(client, labeling):
    client.force_login(labeling["annotator"])
    pane = client.get(reverse("rerank-status", args=[labeling["query"].pk])).content.decode()
    offered = re.findall(r'name="method" value="(\w+)"', pane)
    assert offered == list(MODEL_METHODS) == ["yesno", "structured", "judges", "visret"]
    assert all(method.button in pane for method in MODEL_METHODS.values())
    response = client.post(reverse("start-rerank", args=[labeling["query"].pk]), {"method": "grep"})
    assert response.status_code == 400
    assert response.content.decode() == "method is one of yesno, structured, judges, visret."
    with pytest.raises(ValueError, match="method is one of yesno, structured, judges, visret, not 'grep'"):
        start_job(labeling["query"], method="grep")
    assert not RerankJob.objects.exists()
    # Each method's finished job is shown by one of the page's rankings.
    assert {page_ranking(name) for name in MODEL_METHODS} == set(MODEL_RANKINGS) <= set(RANKINGS)
