"""manage.py rerank against the real index of a small collection and a real chat-completions server."""

import json

import pytest
from django.core.management import CommandError, call_command

from annotator.models import RerankScore
from catalog.models import Image
from catalog.thumbnails import original_file
from search.facade import search
from tests.lmm.server import p_yes

pytestmark = pytest.mark.django_db


def test_rerank_prints_the_top_n_by_p_yes_and_keeps_the_scores(labeling, model, capsys):
    query = labeling["query"]
    top = [hit.image_id for hit in search(text=query.text, k=30)]
    expected = sorted(top, key=lambda i: -p_yes(original_file(Image.objects.get(pk=i))[0].read_bytes()))
    call_command("rerank", str(query.pk), "--top", "30", "--json")
    out, err = capsys.readouterr()
    printed = json.loads(out)
    assert [row["image_id"] for row in printed] == expected
    assert all(
        row["score"]
        == pytest.approx(p_yes(original_file(Image.objects.get(pk=row["image_id"]))[0].read_bytes()), abs=1e-5)
        for row in printed
    )
    assert "30 asked, 0 from the cache" in err and len(model.requests) == 30
    stored = RerankScore.objects.filter(query=query, method="yesno", model="tiny-vlm")
    assert stored.count() == 30 and {s.clip_rank for s in stored} == set(range(1, 31))

    call_command("rerank", str(query.pk), "--top", "30")  # again: every answer from the cache
    out, err = capsys.readouterr()
    assert [int(line.split("\t")[0]) for line in out.splitlines()] == expected
    assert "0 asked, 30 from the cache" in err and len(model.requests) == 30
    assert RerankScore.objects.filter(query=query).count() == 30


@pytest.mark.parametrize(
    "arguments, message",
    [(["999999"], "No query 999999"), (["seven"], "must be a query's id"), (["QUERY", "--top", "0"], "--top must be")],
)
def test_bad_arguments(labeling, model, arguments, message):
    arguments = [str(labeling["query"].pk) if a == "QUERY" else a for a in arguments]
    with pytest.raises(CommandError, match=message):
        call_command("rerank", *arguments)
    assert not model.requests and not RerankScore.objects.exists()


def test_no_model_configured_says_what_to_set(labeling, settings):
    settings.QUIRE_LMM_BASE_URL = ""
    with pytest.raises(CommandError, match="QUIRE_LMM_BASE_URL"):
        call_command("rerank", str(labeling["query"].pk))
    assert not RerankScore.objects.exists()


def test_a_failing_model_keeps_nothing_half_written(labeling, model):
    model.answer = lambda request: (503, {"error": {"message": "loading the model"}}, {})
    with pytest.raises(CommandError, match="answered 503: loading the model"):
        call_command("rerank", str(labeling["query"].pk), "--top", "10")
    assert not RerankScore.objects.exists()
