"""Structured rerank: sub-questions from a text model (or from staff), each image asked each one with its
earlier answers chained in, S = the mean P(yes); against the real chat server."""

import base64
import json
import math
import re

import pytest
from django.core.management import call_command

from annotator.models import Query, RerankScore
from lmm.chat import ModelUnavailable
from lmm.structured import parse_questions
from tests.lmm.server import completion, is_text_only, p_yes, text_completion

pytestmark = pytest.mark.django_db

QUESTIONS = "1. Is the bird a Black Skimmer?\n2) Is its lower bill touching the water?\n- Is it flying low?\nDone."


def p_for(request) -> float:
    """The test model: P(yes) from the image's bytes and the question asked (so chaining matters)."""
    content = request["messages"][0]["content"]
    data = base64.b64decode(content[1]["image_url"]["url"].split(",", 1)[1])
    question = re.search(r"Question: (.*)\n", content[0]["text"]).group(1)
    shift = {"Is the bird a Black Skimmer?": 0.0, "Is its lower bill touching the water?": 0.3}.get(question, 0.6)
    return (p_yes(data) + shift) % 1 * 0.9 + 0.05


@pytest.fixture
def structured_model(model, settings):
    settings.QUIRE_TEXT_MODEL_BASE_URL, settings.QUIRE_TEXT_MODEL = model.base_url, "tiny-llm"

    def answer(request):
        if is_text_only(request):
            prompt = request["messages"][0]["content"]
            return 200, text_completion(QUESTIONS if "yes/no questions" in prompt else "Black Skimmers skim."), {}
        p = p_for(request)
        return 200, completion([("Yes", math.log(p)), ("No", math.log(1 - p))]), {}

    model.answer = answer
    return model


def test_questions_are_read_one_per_line():
    assert parse_questions(QUESTIONS) == [
        "Is the bird a Black Skimmer?",
        "Is its lower bill touching the water?",
        "Is it flying low?",
    ]
    with pytest.raises(ModelUnavailable, match="no yes/no question"):
        parse_questions("I cannot help with that.")


def test_plan_then_rerank_with_chained_answers(labeling, structured_model, capsys):
    query = labeling["query"]
    call_command("rerank", str(query.pk), "--method", "structured", "--plan-only")
    query.refresh_from_db()
    assert query.context == "Black Skimmers skim." and len(query.subquestions) == 3
    assert "1. Is the bird a Black Skimmer?" in capsys.readouterr().out
    query.subquestions = ["Is the bird a Black Skimmer?", "Is its lower bill touching the water?"]  # staff edit
    query.save()
    texts_before = sum(is_text_only(r) for r in structured_model.requests)
    call_command("rerank", str(query.pk), "--method", "structured", "--top", "12", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert sum(is_text_only(r) for r in structured_model.requests) == texts_before  # the plan was kept
    image_requests = [r for r in structured_model.requests if not is_text_only(r)]
    assert len(image_requests) == 24  # 12 images x 2 questions
    second = [r for r in image_requests if "lower bill" in r["messages"][0]["content"][0]["text"]]
    assert all("Earlier: Is the bird a Black Skimmer? " in r["messages"][0]["content"][0]["text"] for r in second)
    rows = {s.image_id: s for s in RerankScore.objects.filter(query=query, method="structured")}
    for row in printed:
        stored = rows[row["image_id"]]
        assert [q for q, _ in stored.detail] == query.subquestions
        assert row["score"] == pytest.approx(sum(p for _, p in stored.detail) / 2, abs=1e-5)
    assert [r["score"] for r in printed] == sorted((r["score"] for r in printed), reverse=True)
    call_command("rerank", str(query.pk), "--method", "structured", "--top", "12")
    assert "0 asked, 24 from the cache" in capsys.readouterr().err


def test_the_detail_pane_gets_the_answers(client, labeling, structured_model, django_capture_on_commit_callbacks):
    query = labeling["query"]
    Query.objects.filter(pk=query.pk).update(context="c", subquestions=["Is the bird a Black Skimmer?"])
    from annotator.methods.rerank import run_job
    from annotator.models import RerankJob

    job = RerankJob.objects.create(query=query, model="tiny-vlm", method="structured", top=20)
    assert run_job(job.pk).status == "done"
    client.force_login(labeling["annotator"])
    html = client.get(f"/queries/{query.pk}/", {"ranking": "rerank"}).content.decode()
    assert html.count("data-why=") == 20 and "Is the bird a Black Skimmer?" in html
