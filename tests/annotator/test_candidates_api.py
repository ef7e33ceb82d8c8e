"""GET /api/queries/{id}/candidates/ and POST /api/queries/{id}/labels/: what scripts (and the hidden
checks) use to label with a ranking that learns."""

import numpy as np
import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotator.models import Label, LabelEvent, Query, QueryExample
from search import strategies
from search.facade import STRATEGIES, search
from search.spec import store_root
from search.store import EmbeddingStore
from tests.factories import database_snapshot

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(labeling):
    client = APIClient()
    client.force_authenticate(labeling["annotator"])
    return client


def candidates(api, query, **params):
    response = api.get(f"/api/queries/{query.pk}/candidates/", params)
    assert response.status_code == 200, response.content
    body = response.json()
    assert [item["rank"] for item in body["results"]] == list(range(1, len(body["results"]) + 1))
    return body


def store_vectors(settings, tiny_spec):
    embeddings = EmbeddingStore.existing(store_root(), tiny_spec.name).load()
    return dict(zip(embeddings.image_ids.tolist(), np.asarray(embeddings.vectors, dtype=np.float32), strict=True))


def test_the_text_strategy_is_todays_ranking_without_labeled_images(api, labeling):
    query = labeling["query"]
    ranking = [hit.image_id for hit in search(text=query.text, k=120)]
    body = candidates(api, query, k=10)
    assert body["strategy"] == "text" and [r["image_id"] for r in body["results"]] == ranking[:10]
    api.post(
        f"/api/queries/{query.pk}/labels/",
        {"labels": [{"image": i, "value": "not_relevant"} for i in ranking[:5]]},
        format="json",
    )
    assert [r["image_id"] for r in candidates(api, query, k=10)["results"]] == ranking[5:15]


def test_feedback_ranks_by_the_fitted_vector(api, labeling, tiny_spec, settings):
    query = labeling["query"]
    vectors = store_vectors(settings, tiny_spec)
    ranking = [hit.image_id for hit in search(text=query.text, k=120)]
    relevant, not_relevant = ranking[100:104], ranking[:10]
    api.post(
        f"/api/queries/{query.pk}/labels/",
        {
            "labels": [{"image": i, "value": "relevant"} for i in relevant]
            + [{"image": i, "value": "not_relevant"} for i in not_relevant]
        },
        format="json",
    )
    body = candidates(api, query, strategy="feedback", k=20)
    from search.clip import get_embedder

    q = get_embedder(tiny_spec).encode_text([query.text])[0]
    w = strategies.feedback_vector(
        q, np.stack([vectors[i] for i in relevant]), np.stack([vectors[i] for i in not_relevant])
    )
    unlabeled = [i for i in vectors if i not in set(relevant) | set(not_relevant)]
    brute = sorted(unlabeled, key=lambda i: (-float(vectors[i].astype(np.float32) @ w.astype(np.float32)), i))
    text_order = [i for i in ranking if i in unlabeled]
    results = body["results"]
    # The text order's last labels (ranks 1 to 10) were all not relevant, the learned ranking's own (101 to
    # 24) all relevant: it leads, and the text order keeps its probe share (search/batches.py).
    learned = [r["image_id"] for r in results if r["source"] == "learned"]
    probes = [r["image_id"] for r in results if r["source"] == "text"]
    assert (len(learned), len(probes)) == (18, 2)
    waiting = {i for r in results for i in r["near_duplicates"]}
    assert learned == [i for i in brute if i not in waiting][:18]
    assert probes == [i for i in text_order if i not in set(learned) | waiting][:2]
    assert learned != text_order[:18]  # it learned


def test_image_and_fusion_use_the_examples(api, labeling):
    query = labeling["query"]
    body = candidates(api, query, strategy="image", image=[7], k=20)
    assert body["results"][0]["image_id"] == 7  # the example itself is most like itself
    # The query's text order is the floor of a ranking by examples too: its probe share is in the batch.
    probes = [r["image_id"] for r in body["results"] if r["source"] == "text"]
    assert len(probes) == 2 and probes[0] == search(text=query.text, k=1)[0].image_id
    QueryExample.objects.create(query=query, image_id=7, relevant=True)
    assert candidates(api, query, strategy="fusion", k=5)["results"]
    for strategy in STRATEGIES:
        candidates(api, query, strategy=strategy, k=3)
    assert STRATEGIES == strategies.STRATEGIES


@pytest.mark.parametrize(
    "params, problem",
    [
        ({"strategy": "magic"}, "strategy"),
        ({"k": "0"}, None),
        ({"k": "1001"}, "k"),
        ({"k": "²"}, "k"),
        ({"image": "x"}, "image"),
        ({"taxon": "Puffinn"}, "No taxon is called"),
        ({"strategy": "check", "share": "maybe"}, "share"),
    ],
)
def test_bad_candidate_parameters_answer_400(api, labeling, params, problem):
    response = api.get(f"/api/queries/{labeling['query'].pk}/candidates/", params)
    if problem is None:  # k=0 means the default
        assert response.status_code == 200
    else:
        assert response.status_code == 400 and problem in response.content.decode()


def test_a_batch_of_labels_is_all_or_nothing_with_its_history(api, labeling):
    query = labeling["query"]
    url = f"/api/queries/{query.pk}/labels/"
    before = database_snapshot()
    bad = api.post(
        url, {"labels": [{"image": 3, "value": "relevant"}, {"image": 999999, "value": "relevant"}]}, format="json"
    )
    assert bad.status_code == 400 and "999999" in bad.content.decode()
    for body in ({"labels": []}, {"labels": {"image": 3}}, {"labels": [{"image": 1.5, "value": "relevant"}]}, {}):
        assert api.post(url, body, format="json").status_code == 400
    assert database_snapshot() == before
    ok = api.post(url, {"labels": [{"image": 3, "value": "relevant"}, {"image": 6, "value": "unsure"}]}, format="json")
    assert ok.status_code == 200 and ok.json() == {"written": 2, "labels": 2}
    again = api.post(url, {"labels": [{"image": 3, "value": "relevant"}]}, format="json")
    assert again.json() == {"written": 0, "labels": 1}
    assert dict(Label.objects.filter(query=query).values_list("image_id", "value")) == {3: "relevant", 6: "unsure"}
    assert set(LabelEvent.objects.values_list("image_id", "source", "user__username")) == {
        (3, "api", "ann"),
        (6, "api", "ann"),
    }


def test_both_are_in_the_openapi_schema(api):
    schema = api.get("/api/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json").json()
    assert "/api/queries/{id}/candidates/" in schema["paths"] and "/api/queries/{id}/labels/" in schema["paths"]
    assert User.objects.exists() and Query.objects.exists()


def test_a_batch_holds_up_to_5000_labels(api, labeling):
    url = f"/api/queries/{labeling['query'].pk}/labels/"
    too_many = {"labels": [{"image": 3, "value": "relevant"}] * 5001}
    assert api.post(url, too_many, format="json").status_code == 400
    many = {"labels": [{"image": 3 + n % 100, "value": "relevant"} for n in range(5000)]}
    answer = api.post(url, many, format="json")
    assert answer.status_code == 200 and answer.json() == {"written": 100, "labels": 5000}


def test_a_remembered_text_order_gives_the_batches_a_fresh_search_would(api, labeling):
    """The text order's candidates are kept between calls (search/text_orders.py); batch after batch, the
    candidates are those computed with nothing remembered."""
    from search import engine
    from search.text_orders import TextOrders

    query = labeling["query"]
    truth = {hit.image_id for hit in search(text=query.text, k=400)[::7]}  # some relevant, spread out
    for _ in range(4):
        body = candidates(api, query, strategy="feedback", k=25)
        for loaded in engine._loaded.values():
            loaded.text_orders = TextOrders()  # forget: the next call searches afresh
        assert candidates(api, query, strategy="feedback", k=25) == body
        labels = [{"image": r["image_id"], "value": "relevant" if r["image_id"] in truth else "not_relevant"}
                  for r in body["results"]]  # fmt: skip
        assert api.post(f"/api/queries/{query.pk}/labels/", {"labels": labels}, format="json").status_code == 200
