"""The judge panel (RMIR): five phrasings vote accept / reject / abstain over the CLIP top N; the majority
is a pre-label with its share as confidence, shown on the page; only labels count as ground truth."""

import base64
import math
import re

import pytest
from django.urls import reverse

from annotator.methods.rerank import run_job
from annotator.models import Label, PreLabel, RerankJob
from lmm import panel
from tests.lmm.server import completion, p_yes

pytestmark = pytest.mark.django_db


def judge_p(request) -> float:
    """Each phrasing sees the image a little differently: P(yes) from the bytes, shifted per prompt."""
    content = request["messages"][0]["content"]
    data = base64.b64decode(content[1]["image_url"]["url"].split(",", 1)[1])
    shift = next(i for i, prompt in enumerate(panel.PROMPTS) if content[0]["text"].startswith(prompt[:18])) * 0.07
    return min(0.97, max(0.03, p_yes(data) - 0.14 + shift))


def test_votes_majority_and_confidence():
    v = panel.verdict([("a", 0.9), ("b", 0.8), ("c", 0.55), ("d", 0.2), ("e", 0.7)])
    assert (v.value, v.confidence) == ("accept", 0.6) and [x[2] for x in v.votes][2] == "abstain"
    assert panel.verdict([("a", 0.9), ("b", 0.1)]).value == "abstain"  # a tie is no verdict
    assert panel.verdict([("a", 0.05)] * 5).confidence == 1.0


def test_the_panel_prelabels_the_top_n_and_the_page_shows_them(client, labeling, model):
    model.answer = lambda request: (
        200,
        completion([("Yes", math.log(judge_p(request))), ("No", math.log(1 - judge_p(request)))]),
        {},
    )
    query = labeling["query"]
    job = run_job(RerankJob.objects.create(query=query, method="judges", model="tiny-vlm", top=40).pk)
    assert job.status == "done", job.error
    assert len(model.requests) == 40 * 5
    by_image = {}
    for request in model.requests:
        data = request["messages"][0]["content"][1]["image_url"]["url"]
        by_image.setdefault(data, []).append(("judge", judge_p(request)))
    prelabels = PreLabel.objects.filter(job=job)
    assert prelabels.count() == 40
    expected = sorted(panel.verdict(votes).value for votes in by_image.values())
    assert sorted(prelabels.values_list("value", flat=True)) == expected
    assert {"accept", "reject"} <= set(expected)
    assert not Label.objects.exists()  # pre-labels are proposals, not labels

    client.force_login(labeling["annotator"])
    html = client.get(reverse("label", args=[query.pk]), {"ranking": "judges"}).content.decode()
    shown = [int(i) for i in re.findall(r'data-image-id="(\d+)"', html)]
    first = PreLabel.objects.get(job=job, image_id=shown[0])
    assert first.value == "accept" and first.confidence == max(p.confidence for p in prelabels if p.value == "accept")
    assert html.count('data-prelabel="') == len(shown) and "panel: accept" in html
