"""VisRet: the query rewritten by a text model, drawn 3 times by an image generator (the OpenAI images wire
format, served by the test server), each drawing searched image to image, the rankings fused by RRF (k=1)."""

import re

import numpy as np
import pytest
from django.urls import reverse

from annotator.methods.rerank import run_job, start_job
from annotator.models import GeneratedImage, RerankJob
from search.facade import fuse_rankings, rank
from tests.lmm.server import images_response, is_text_only, text_completion

pytestmark = pytest.mark.django_db

LONG = " ".join(["A black and white Black Skimmer flying low, its long lower bill cutting the calm water"] * 3)


@pytest.fixture
def visret_models(model, settings, labeling):
    settings.QUIRE_TEXT_MODEL_BASE_URL, settings.QUIRE_TEXT_MODEL = model.base_url, "tiny-llm"
    settings.QUIRE_IMAGE_MODEL_BASE_URL, settings.QUIRE_IMAGE_MODEL = model.base_url, "tiny-diffusion"
    files = sorted(labeling["images"].rglob("*.jpg"))
    drawings = [files[3].read_bytes(), files[50].read_bytes(), files[90].read_bytes()]

    def answer(request):
        if request["_path"].endswith("/images/generations"):
            return 200, images_response(drawings[: request["n"]]), {}
        assert is_text_only(request)
        return 200, text_completion(LONG), {}

    model.answer = answer
    return model


def test_visret_draws_the_rewritten_query_and_ranks_by_the_fused_searches(
    client, labeling, visret_models, django_capture_on_commit_callbacks
):
    query = labeling["query"]
    with django_capture_on_commit_callbacks(execute=True):
        job = start_job(query, method="visret")
    job.refresh_from_db()
    assert job.status == "done", job.error
    drawings = list(GeneratedImage.objects.filter(job=job))
    assert len(drawings) == 3
    description = drawings[0].description
    assert len(description.split()) == 30 and description == " ".join(LONG.split()[:30])
    generation = next(r for r in visret_models.requests if r["_path"].endswith("/images/generations"))
    assert (generation["model"], generation["n"], generation["prompt"]) == ("tiny-diffusion", 3, description)

    vectors = [np.frombuffer(bytes(d.vector), dtype=np.float32) for d in drawings]
    rankings = [[h.image_id for h in rank(strategy="image", example_vectors=[v], k=1000)] for v in vectors]
    expected = [image_id for image_id, _ in fuse_rankings(rankings, k=1)][:50]
    client.force_login(labeling["annotator"])
    html = client.get(reverse("label", args=[query.pk]), {"ranking": "visret"}).content.decode()
    assert [int(i) for i in re.findall(r'data-image-id="(\d+)"', html)] == expected
    assert html.count('alt="VisRet drawing') == 3
    assert client.get(reverse("drawing-file", args=[query.pk, drawings[0].pk])).status_code == 200


def test_a_failing_generator_fails_the_job_with_a_sentence(labeling, visret_models):
    visret_models.answer = lambda request: (
        (500, {"error": {"message": "CUDA out of memory"}}, {})
        if request["_path"].endswith("/images/generations")
        else (200, text_completion("a bird"), {})
    )
    job = RerankJob.objects.create(query=labeling["query"], method="visret", model="tiny-diffusion")
    job = run_job(job.pk)
    assert job.status == "failed" and "answered 500: CUDA out of memory" in job.error
    assert not GeneratedImage.objects.exists()
