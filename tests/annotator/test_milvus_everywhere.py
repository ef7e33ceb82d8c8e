"""QUIRE_VECTOR_BACKEND=milvus with a Milvus Lite file (the issue's QUIRE_MILVUS_URI=var/vectors.db): every caller
of search gets what FAISS flat gives on the same vectors (`manage.py search`, the candidates API for every
strategy, `simulate_labeling`), embedding jobs add their images, and what cannot be served says so in one
sentence (exit 1, a 503) without changing anything stored."""

import html
import json
import os
import subprocess
import sys
from io import StringIO
from pathlib import Path

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotator.labels import set_label
from annotator.models import LabelSource, LabelValue
from search import engine, milvus
from search.facade import STRATEGIES, rankable, search
from search.spec import configured_spec, store_root
from search.store import Embeddings, EmbeddingStore
from tests.factories import database_snapshot, make_collection

pytestmark = pytest.mark.django_db
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def backends(labeling, settings, tmp_path):
    """The labeling collection indexed by FAISS (flat, at 120 images) and loaded into a Milvus Lite file;
    `use(name)` switches the backend every search goes through."""
    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")
    out = StringIO()
    call_command("build_index", "--backend", "milvus", stdout=out)
    assert "Loaded +120 -0, all indexed: the FLAT collection holds 120 vectors" in out.getvalue()

    def use(name):
        settings.QUIRE_VECTOR_BACKEND = name

    yield use
    engine.forget()


def under_both(use, measure):
    use("faiss")
    by_faiss = measure()
    use("milvus")
    return by_faiss, measure()


def run_search(*args) -> list[dict]:
    out = StringIO()
    call_command("search", *args, "--json", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_the_search_command_ranks_as_faiss_flat(backends, labeling):
    query = labeling["query"]
    ranking = [hit.image_id for hit in search(text=query.text, k=30)]
    for image_id in ranking[:6]:
        set_label(
            query_id=query.pk,
            image_id=image_id,
            value=LabelValue.NOT_RELEVANT,
            user=labeling["annotator"],
            source=LabelSource.API,
        )
    for args in (
        ("Black Skimmer performing skimming",),
        ("skimmer over water", "-k", "7", "--offset", "20"),
        ("a puffin", "--taxon", "Fratercula arctica", "-k", "60"),  # every image of the species, exactly
        ("--image", str(ranking[3]), "-k", "15"),
        ("Black Skimmer performing skimming", "--exclude-labeled", str(query.pk)),
    ):
        by_faiss, by_milvus = under_both(backends, lambda args=args: run_search(*args))
        assert by_milvus == by_faiss and by_faiss, args
    assert len(by_faiss) == 50 and not {row["image_id"] for row in by_faiss} & set(ranking[:6])


def test_the_candidates_api_ranks_as_faiss_flat_for_every_strategy(backends, labeling):
    query = labeling["query"]
    api = APIClient()
    api.force_authenticate(labeling["annotator"])
    ranking = [hit.image_id for hit in search(text=query.text, k=120)]
    labels = [{"image": i, "value": "relevant"} for i in ranking[10:40:4]]
    labels += [{"image": i, "value": "not_relevant"} for i in ranking[:8]]
    assert api.post(f"/api/queries/{query.pk}/labels/", {"labels": labels}, format="json").status_code == 200
    for strategy in STRATEGIES:
        params = {"strategy": strategy, "k": 20, "image": ranking[50:52]}

        def candidates(params=params):
            response = api.get(f"/api/queries/{query.pk}/candidates/", params)
            assert response.status_code == 200, response.content
            return response.json()["results"]

        by_faiss, by_milvus = under_both(backends, candidates)
        assert [(r["image_id"], r["source"], r["near_duplicates"]) for r in by_milvus] == [
            (r["image_id"], r["source"], r["near_duplicates"]) for r in by_faiss
        ], strategy
        np.testing.assert_allclose([r["score"] for r in by_milvus], [r["score"] for r in by_faiss], atol=1e-6)
        labeled = {label["image"] for label in labels}
        assert len(by_faiss) == 20 and not labeled & {r["image_id"] for r in by_faiss}


def test_simulate_labeling_replays_as_on_faiss_flat(backends, labeling, tmp_path):
    query = labeling["query"]
    positives = [hit.image_id for hit in search(text=query.text, k=120)][25:120:8]
    qrels = tmp_path / "qrels.csv"
    qrels.write_text("query_id,image_id\n" + "".join(f"{query.pk},{image}\n" for image in positives))

    def simulate():
        out = tmp_path / "sim.json"
        call_command(
            "simulate_labeling", "--qrels", str(qrels), "--strategy", "text", "--strategy", "feedback",
            "--strategy", "rocchio", "--batch", "10", "--max-labels", "120", "--json", str(out), "--no-save",
        )  # fmt: skip
        return json.loads(out.read_text())["queries"]

    by_faiss, by_milvus = under_both(backends, simulate)
    assert by_milvus == by_faiss
    assert {row["strategy"] for row in by_faiss} == {"text", "feedback", "rocchio"}


def test_an_embedding_job_adds_its_images_to_the_collection(settings, tiny_settings, tmp_path):
    """With Milvus configured, the index build an embedding job queues loads its new images, and an open
    collection ranks them in its next search."""
    settings.QUIRE_VECTOR_BACKEND = "milvus"
    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")
    spec_name = engine.configured_spec().name
    try:
        make_collection(tmp_path / "images", 30)
        call_command("embed")
        assert sorted(milvus.held_ids(spec_name).tolist()) == list(range(1, 31))
        before = {hit.image_id for hit in search(text="a bird", k=100)}
        make_collection(tmp_path / "images", 12, first_id=31)
        call_command("embed")
        after = {hit.image_id for hit in search(text="a bird", k=100)}  # the same open collection
        assert before == set(range(1, 31)) and after == set(range(1, 43))
    finally:
        engine.forget()


def test_build_index_shows_its_progress_and_a_second_load_adds_nothing(backends, labeling, admin_client):
    out = StringIO()
    call_command("build_index", "--backend", "milvus", stdout=out)
    assert "Loaded +0 -0, all indexed: the FLAT collection holds 120 vectors" in out.getvalue()
    call_command("build_index", "--backend", "milvus", "--rebuild", stdout=out)
    assert "Loaded +120 -0, all indexed" in out.getvalue()
    from search.models import IndexBuild

    last = IndexBuild.objects.first()
    assert (last.backend, last.done, last.total, last.vectors, last.built_kind) == ("milvus", 120, 120, 120, "FLAT")
    page = admin_client.get("/admin/search/indexbuild/").content.decode()
    assert "120 of 120 vectors (100%)" in page and "milvus" in page


@pytest.fixture
def refusals(labeling, settings, client):
    """The labeling collection, Milvus configured, an annotator signed in to the API and the pages, and what
    must be left exactly as it was."""
    settings.QUIRE_VECTOR_BACKEND = "milvus"
    api = APIClient()
    api.force_authenticate(labeling["annotator"])
    client.force_login(labeling["annotator"])
    before = database_snapshot()
    yield api, client
    engine.forget()
    assert database_snapshot() == before


def refused_everywhere(refusals, query, sentence):
    """`manage.py search`, the candidates API and the labeling page each say `sentence`."""
    api, client = refusals
    with pytest.raises(CommandError) as refused:
        call_command("search", "a skimmer")
    assert sentence in str(refused.value) and "\n" not in str(refused.value)
    response = api.get(f"/api/queries/{query.pk}/candidates/")
    assert response.status_code == 503 and sentence in response.json()["detail"]
    page = client.get(f"/queries/{query.pk}/")
    assert page.status_code == 200 and sentence in html.unescape(page.content.decode())


def test_an_unreachable_server_is_one_sentence_everywhere(refusals, labeling, settings):
    settings.QUIRE_MILVUS_URI = "http://127.0.0.1:1"
    refused_everywhere(refusals, labeling["query"], "The vector database at QUIRE_MILVUS_URI=http://127.0.0.1:1")
    with pytest.raises(CommandError, match="QUIRE_MILVUS_URI=http://127.0.0.1:1 cannot be reached"):
        call_command("build_index", "--backend", "milvus")


def test_a_search_before_anything_was_loaded_says_what_to_run(refusals, labeling, settings, tmp_path):
    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")
    refused_everywhere(refusals, labeling["query"], "Nothing is loaded into the vector database at QUIRE_MILVUS_URI=")


def test_a_collection_of_another_dimension_is_refused_and_left_alone(refusals, labeling, settings, tmp_path):
    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")
    name = engine.configured_spec().name
    rng = np.random.default_rng(0)
    other = rng.normal(size=(40, 8)).astype(np.float16)
    milvus.load_store(name, Embeddings(other, np.arange(1, 41, dtype=np.int64), np.full(40, 10, dtype=np.int64)))
    dim = EmbeddingStore.existing(store_root(), name).dim
    refused_everywhere(refusals, labeling["query"], f"holds 8-dimensional vectors but {name} gives {dim}")
    with pytest.raises(CommandError, match="holds 8-dimensional vectors .* --rebuild"):
        call_command("build_index", "--backend", "milvus")
    assert sorted(milvus.held_ids(name).tolist()) == list(range(1, 41))  # the collection as it was


def test_the_command_exits_1_with_one_line_for_an_unreachable_server(tmp_path):
    """As an operator runs it: its own process, the setting from the environment."""
    environment = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "quire.settings",
        "QUIRE_DATA_DIR": str(tmp_path),
        "QUIRE_VECTOR_BACKEND": "milvus",
        "QUIRE_MILVUS_URI": "http://127.0.0.1:1",
        "HF_HUB_OFFLINE": "1",
    }
    environment.pop("DATABASE_URL", None)
    done = subprocess.run(
        [sys.executable, "manage.py", "search", "a skimmer"], cwd=ROOT, env=environment, capture_output=True,
        text=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 1
    lines = [line for line in done.stderr.splitlines() if line.strip()]
    assert lines[-1].startswith("CommandError: The vector database at QUIRE_MILVUS_URI=http://127.0.0.1:1"), lines
    assert "Traceback" not in done.stderr


def test_an_unknown_backend_is_refused_at_start(tmp_path):
    environment = {**os.environ, "QUIRE_DATA_DIR": str(tmp_path), "QUIRE_VECTOR_BACKEND": "pinecone"}
    done = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=environment, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1 and "QUIRE_VECTOR_BACKEND is 'pinecone': set it to faiss or milvus." in done.stderr


def test_a_given_vector_is_read_wide_only_where_the_backend_does_not_widen_itself(backends, monkeypatch):
    """FAISS widens a search as its results require (search/index.py), so a vector of unknown kind starts narrow
    there; Milvus reads only the breadth it is given, so the same vector is read wide (issue 41)."""
    from search.backends import FaissVectors

    asked: list[tuple[str, bool]] = []
    for name, backend in (("faiss", FaissVectors), ("milvus", milvus.MilvusVectors)):
        real = backend.search

        def spy(self, vector, *, real=real, name=name, **options):
            asked.append((name, options.get("wide", False)))
            return real(self, vector, **options)

        monkeypatch.setattr(backend, "search", spy)
    dim = EmbeddingStore.existing(store_root(), configured_spec().name).dim
    vector = np.random.default_rng(0).standard_normal(dim)
    for name in ("faiss", "milvus"):
        backends(name)
        search(vector=vector, k=5)
        search(text="a heron", k=5)
    assert asked == [("faiss", False), ("faiss", True), ("milvus", True), ("milvus", True)]


def test_which_images_a_ranking_can_show_is_the_same_on_both(backends, labeling, tmp_path):
    """facade.rankable (what the completeness advice counts as still to label): the images with a vector, in the
    order asked, on Milvus as on FAISS; images added since the load, and ids the catalog never had, on neither."""
    make_collection(tmp_path / "later", 3, first_id=500)  # in the catalog, embedded by no job yet
    asked = [500, 7, 999_999, 3, 501, 120, 1]
    by_faiss, by_milvus = under_both(backends, lambda: rankable(asked))
    assert by_faiss == by_milvus == [7, 3, 120, 1]
