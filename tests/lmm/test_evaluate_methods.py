"""manage.py evaluate --from-model --method ...: a model-based system's run over the labeled queries,
scored and written as TREC for the evaluation pages."""

import json

import pytest
from django.core.management import CommandError, call_command

from annotator.labels import set_label
from annotator.models import RerankScore
from search.facade import search

pytestmark = pytest.mark.django_db


def test_the_yesno_rerank_run_is_the_reranked_top_then_the_clip_ranking(labeling, model, tmp_path):
    query = labeling["query"]
    clip = [hit.image_id for hit in search(text=query.text, k=120)]
    for image_id in clip[::7]:
        set_label(query_id=query.pk, image_id=image_id, value="relevant", source="api")
    for image_id in clip[1::7]:
        set_label(query_id=query.pk, image_id=image_id, value="not_relevant", source="api")
    run_file, report = tmp_path / "yesno.trec", tmp_path / "report.json"
    call_command(
        "evaluate", "--from-model", "--method", "yesno", "--top", "20", "--k", "50",
        "--save-run", str(run_file), "--json", str(report),
    )  # fmt: skip
    lines = [line.split() for line in run_file.read_text().splitlines()]
    ids = [int(parts[2]) for parts in lines]
    head = list(
        RerankScore.objects.filter(query=query).order_by("-score", "clip_rank").values_list("image_id", flat=True)
    )
    assert len(head) == 20 and ids[:20] == head
    assert ids[20:] == [i for i in clip if i not in set(head)][:30]  # CLIP order below the reranked top
    scores = [float(parts[4]) for parts in lines]
    assert scores == sorted(scores, reverse=True)  # a reader sorting by score keeps the order
    assert [int(parts[3]) for parts in lines] == list(range(1, 51))
    result = json.loads(report.read_text())
    assert result["overall"]["ap"] is not None and result["per_query"][0]["query_id"] == query.pk


def test_a_method_on_queries_quire_lacks_says_so(labeling, model, tmp_path):
    qrels = tmp_path / "qrels.csv"
    qrels.write_text("query_id,image_id\n424242,1\n")
    with pytest.raises(CommandError, match="Quire has no query 424242"):
        call_command("evaluate", "--from-model", "--method", "yesno", "--qrels", str(qrels))


@pytest.mark.parametrize("method", ["yesno", "structured", "judges", "visret"])
def test_a_method_without_its_model_says_so_before_searching_anything(labeling, settings, monkeypatch, method):
    """Before: the CLIP search of every query ran first (42.6 s on the demo) and only then "no model is configured"."""
    settings.QUIRE_LMM_BASE_URL = settings.QUIRE_IMAGE_MODEL_BASE_URL = ""
    settings.QUIRE_JUDGES = []
    from annotator.labels import LabelChange, set_labels
    from evaluation import runs

    query = labeling["query"]
    set_labels(query_id=query.pk, changes=[LabelChange(1, "relevant")], user=labeling["annotator"], source="api")

    searched = []
    monkeypatch.setattr(runs, "search_texts", lambda *texts, **arguments: searched.append(texts) or [])
    with pytest.raises(CommandError, match="is configured"):
        call_command("evaluate", "--from-model", "--method", method)
    assert searched == []
