"""The GPU path's functions, run where this machine can run them (issue 56).

search/card.py ranks with torch, so the same functions rank on a CPU device here and on the card of a GPU host:
every test below drives them on the CPU, held to the CPU's exact FAISS ranking (same ids, same order, scores
equal within fp16 rounding), on worlds shaped like CLIP's with a modality gap and near-duplicates
(bench/realistic.py). The last test holds the card to the same answers and is skipped, saying why, where no GPU
can be used.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from bench import realistic
from search import card as card_module
from search import device
from search import index as search_index
from search.card import ERROR, CardRanker, CardVectors
from search.store import Embeddings

ROOT = Path(__file__).resolve().parents[2]
COUNT, DIM = 20_000, 256


def world_of(shape: str):
    vectors, taxa, world = realistic.generate(COUNT, DIM, seed=3, shape=shape)
    embeddings = Embeddings(vectors, np.arange(10, 10 + 3 * COUNT, 3, dtype=np.int64), taxa)
    cpu = search_index.Searcher(embeddings, search_index.build(embeddings, "flat"))
    return embeddings, cpu, world


@pytest.fixture(scope="module", params=["clip", "steep-gap"])
def world(request):
    """Two shapes: CLIP's, and a steep spectrum with many near-duplicates (ties and near-ties at the cut)."""
    return world_of(request.param)


def same_answer(card_hits, cpu_hits):
    """The same ids in the same order, scores within fp16 rounding (in fact about 1e-7: the same sums, in another
    order). Images whose exact scores are that close (near-duplicates) may trade places: neither order is wrong."""
    assert len(card_hits) == len(cpu_hits)
    card_scores = np.array([hit.score for hit in card_hits])
    cpu_scores = np.array([hit.score for hit in cpu_hits])
    assert len(cpu_hits) == 0 or np.abs(card_scores - cpu_scores).max() < 2**-11
    near_ties = np.abs(card_scores - cpu_scores) < 1e-6
    for position, (mine, theirs) in enumerate(zip(card_hits, cpu_hits, strict=True)):
        if mine.image_id != theirs.image_id:  # a swap between near-ties only
            tied = [hit for hit in cpu_hits if abs(hit.score - theirs.score) < 1e-6]
            assert near_ties[position] and len(tied) > 1, (position, mine, theirs)
        else:
            assert mine.taxon_id == theirs.taxon_id
    swapped = sum(mine.image_id != theirs.image_id for mine, theirs in zip(card_hits, cpu_hits, strict=True))
    assert swapped <= max(2, len(cpu_hits) // 100)


# --- the device choice --------------------------------------------------------------------------------------------


def test_the_setting_resolves_to_a_device():
    assert device.resolve("auto", "this machine has no NVIDIA driver loaded") == "cpu"
    assert device.resolve("auto", None) == "cuda"
    assert device.resolve("cpu", None) == "cpu"
    assert device.resolve("cuda", None) == "cuda"
    with pytest.raises(device.NoUsableGpu) as refused:
        device.resolve("cuda", "this machine has no NVIDIA driver loaded")
    assert str(refused.value) == (
        "QUIRE_SEARCH_DEVICE is cuda but this machine has no NVIDIA driver loaded: "
        "set it to auto or cpu, or fix the GPU."
    )


@pytest.mark.skipif(device.DRIVER.exists(), reason="this machine has NVIDIA's driver: auto may pick its GPU")
def test_auto_picks_the_cpu_where_there_is_no_gpu_without_importing_torch(settings):
    """On a CPU host auto decides from the driver's absence: a search process that never encodes a text never
    loads torch (about 3 s of start-up) to learn that it has no GPU."""
    code = (
        "import django, os, sys; os.environ['DJANGO_SETTINGS_MODULE'] = 'quire.settings'; django.setup();"
        "from search.device import search_device; print(search_device(), 'torch' in sys.modules)"
    )
    env = {**os.environ, "QUIRE_SEARCH_DEVICE": "auto", "CUDA_VISIBLE_DEVICES": ""}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == ["cpu", "False"]


@pytest.mark.skipif(device.cuda_problem() is None, reason="this machine has a usable GPU: cuda starts")
def test_cuda_without_a_gpu_refuses_to_start_with_one_sentence(tmp_path):
    env = {**os.environ, "QUIRE_SEARCH_DEVICE": "cuda", "QUIRE_DATA_DIR": str(tmp_path), "DEBUG": "1"}
    env.pop("DJANGO_SETTINGS_MODULE", None)
    out = subprocess.run(
        [sys.executable, "manage.py", "check"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120
    )
    assert out.returncode != 0
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("manage.py: QUIRE_SEARCH_DEVICE is cuda but "), out.stderr
    assert lines[0].endswith("set it to auto or cpu, or fix the GPU.")
    env["QUIRE_SEARCH_DEVICE"] = "auto"
    assert subprocess.run([sys.executable, "manage.py", "check"], cwd=ROOT, env=env, timeout=120).returncode == 0


# --- the ranking: the CPU's exact answer ----------------------------------------------------------------------------


def test_the_first_pass_error_is_within_its_bound(world):
    """The bound the exactness argument rests on (search/card.py): fp16 scores of unit rows within ERROR of fp32."""
    embeddings, _, world = world
    rows = torch.from_numpy(np.ascontiguousarray(embeddings.vectors[:5000]))
    for queries in (world.text_queries(20, seed=5), world.image_queries(20, seed=5)):
        q = torch.from_numpy(np.asarray(queries, dtype=np.float32))
        rough = (q.half() @ rows.T).float()
        exact = q @ rows.float().T
        assert float((rough - exact).abs().max()) < ERROR / 4


def test_single_searches_match_the_cpu_exactly(world):
    embeddings, cpu, world = world
    card = CardVectors(cpu, "cpu")
    for query in [*world.text_queries(15, seed=1), *world.image_queries(15, seed=1)]:
        for k, offset in ((50, 0), (50, 50), (1000, 0)):
            same_answer(card.search(query, k=k, offset=offset), cpu.search(query, k=k, offset=offset))


def test_species_filters_and_exclusions_match_the_cpu(world):
    embeddings, cpu, world = world
    card = CardVectors(cpu, "cpu")
    taxa, sizes = np.unique(embeddings.taxon_ids, return_counts=True)
    big = [int(t) for t in taxa[np.argsort(-sizes)[:3]]]  # a genus-sized filter of three species
    small = [int(taxa[np.argsort(sizes)[len(sizes) // 2]])]
    for query in world.text_queries(8, seed=2):
        labeled = [hit.image_id for hit in cpu.search(query, k=300)][::3]  # the labeled images: left out
        for filter_ in (big, small, None):
            same_answer(
                card.search(query, k=100, taxon_ids=filter_, exclude_image_ids=labeled),
                cpu.search(query, k=100, taxon_ids=filter_, exclude_image_ids=labeled),
            )
        assert not {hit.image_id for hit in card.search(query, k=100, exclude_image_ids=labeled)} & set(labeled)
    assert card.search(world.text_queries(1, seed=2)[0], k=10, taxon_ids=[-5]) == []


def test_a_batch_answers_as_its_queries_do_one_by_one(world):
    """Queries ranked together (an evaluation's texts) get each query's own answer, filtered or not."""
    embeddings, cpu, world = world
    card = CardVectors(cpu, "cpu")
    queries = np.concatenate([world.text_queries(30, seed=4), world.image_queries(10, seed=4)])
    species = [int(t) for t in np.unique(embeddings.taxon_ids)[:40]]
    for taxa in (None, species):
        together = card.search_many(queries, k=200, taxon_ids=taxa)
        assert len(together) == len(queries)
        for query, hits in zip(queries, together, strict=True):
            same_answer(hits, cpu.search(query, k=200, taxon_ids=taxa))


def test_ties_at_the_cut_widen_the_first_pass_until_the_answer_is_exact(monkeypatch):
    """500 copies of one image (a near-duplicate crowd) straddling the page's end: with a first pass of one spare
    candidate the bound fails, the pass widens, and the page is the CPU's, the copies ordered by image id."""
    rng = np.random.default_rng(0)
    vectors = realistic.unit(rng.standard_normal((6000, 64))).astype(np.float16)
    query = realistic.unit(rng.standard_normal((1, 64)))[0].astype(np.float32)
    copy = realistic.unit(query[None, :] + 0.9 * realistic.unit(rng.standard_normal((1, 64))))[0]
    vectors[rng.choice(6000, 500, replace=False)] = copy.astype(np.float16)
    embeddings = Embeddings(vectors, rng.permutation(np.arange(100_000, 106_000, dtype=np.int64)), np.zeros(6000, int))
    cpu = search_index.Searcher(embeddings, search_index.build(embeddings, "flat"))
    passes = []
    first_pass = CardRanker._first_pass
    monkeypatch.setattr(card_module, "MARGIN", 1)
    monkeypatch.setattr(
        CardRanker,
        "_first_pass",
        lambda self, v, q, take, skip: passes.append(take) or first_pass(self, v, q, take, skip),
    )
    card = CardVectors(cpu, "cpu")
    hits = card.search(query, k=300)
    same_answer(hits, cpu.search(query, k=300))
    assert len(passes) > 1 and passes == sorted(passes)
    ids = [hit.image_id for hit in hits if abs(hit.score - hits[-1].score) < 1e-6]
    assert ids == sorted(ids) and len(ids) > 1


def test_the_cpus_pages_of_a_crowd_of_copies_neither_skip_nor_repeat():
    """Found beside the card: the CPU's exact index kept whichever of 300 tied copies FAISS met first beyond its
    16 spare candidates, so a page skipped some copies and the next repeated them. Now its margin grows while
    it is all ties, and the pages are the copies in image-id order."""
    rng = np.random.default_rng(4)
    vectors = realistic.unit(rng.standard_normal((4000, 64))).astype(np.float16)
    query = realistic.unit(rng.standard_normal((1, 64)))[0].astype(np.float32)
    copies = rng.choice(4000, 300, replace=False)
    vectors[copies] = realistic.unit(query[None, :] + 0.5 * realistic.unit(rng.standard_normal((1, 64))))[0]
    ids = rng.permutation(np.arange(1, 4001, dtype=np.int64))
    cpu = search_index.Searcher(
        Embeddings(vectors, ids, np.zeros(4000, int)),
        search_index.build(Embeddings(vectors, ids, np.zeros(4000, int)), "flat"),
    )
    pages = [[hit.image_id for hit in cpu.search(query, k=100, offset=offset)] for offset in (0, 100, 200)]
    assert sum(pages, []) == sorted(ids[copies].tolist())


def test_the_lasso_is_scored_where_the_vectors_are(world):
    embeddings, cpu, world = world
    card = CardVectors(cpu, "cpu")
    asked = np.concatenate([embeddings.image_ids[::97], [999_999_999]])  # and one id the store does not have
    query = world.text_queries(1, seed=9)[0]
    scores, found = card.score(asked, query)
    assert found.tolist() == [True] * (len(asked) - 1) + [False]
    expected = search_index.inner_products(np.asarray(embeddings.vectors[::97]), query)
    assert np.abs(scores - expected).max() < 1e-5


def test_vectors_that_do_not_fit_stay_on_the_cpu(monkeypatch, caplog):
    embeddings, cpu, _ = world_of("clip")
    monkeypatch.setattr(card_module, "fits", lambda count, dim, where: False)
    assert card_module.on_card(cpu, "cpu") is None
    assert "do not fit the GPU's free memory: searches stay on the CPU's index" in caplog.text


# --- the engine: the same doors, with the card ----------------------------------------------------------------------


@pytest.mark.django_db
def test_the_engine_ranks_on_the_card_when_the_device_is_cuda(tiny_settings, tmp_path, monkeypatch):
    """The engine's doors (search, search_texts, score_images) with the backend on a card: the answers the CPU
    backend gives, through the same functions (the card here is torch's CPU device)."""
    from django.core.management import call_command

    from search import engine, facade
    from tests.factories import make_collection

    make_collection(tmp_path / "images", 60)
    call_command("embed")
    texts = ["a bird on a branch", "a red flower", "a snake in grass"]
    on_cpu = [facade.search(text=text, k=20) for text in texts]
    batch_on_cpu = facade.search_texts(texts, k=20)
    ids = [hit.image_id for hit in on_cpu[0]] + [10**9]  # and an id without a vector: NaN
    scores_on_cpu = facade.score_images(text=texts[0], image_ids=ids)
    assert np.isnan(scores_on_cpu[-1]) and not np.isnan(scores_on_cpu[:-1]).any()

    monkeypatch.setattr(engine, "search_device", lambda: "cuda")
    monkeypatch.setattr(card_module, "on_card", lambda searcher: CardVectors(searcher, "cpu"))
    engine.forget()
    assert isinstance(engine._get(facade.configured_spec().name).backend, CardVectors)
    for text, hits in zip(texts, on_cpu, strict=True):
        same_answer(facade.search(text=text, k=20), hits)
    for hits, expected in zip(facade.search_texts(texts, k=20), batch_on_cpu, strict=True):
        same_answer(hits, expected)
    for hits, expected in zip(batch_on_cpu, on_cpu, strict=True):
        same_answer(hits, expected)
    on_card = facade.score_images(text=texts[0], image_ids=ids)
    assert np.isnan(on_card[-1]) and np.abs(on_card[:-1] - scores_on_cpu[:-1]).max() < 1e-5
    engine.forget()


# --- index training on the card --------------------------------------------------------------------------------------


def test_an_ivf_trained_through_another_clustering_index_is_the_same_index():
    """build's `clustering` hook (the GPU's flat index on a GPU worker): given FAISS's own CPU flat index, the
    lists and the answers are the ones build makes without it, and the hook is let go of after training."""
    vectors, taxa, world = realistic.generate(8000, 64, seed=1)
    embeddings = Embeddings(vectors, np.arange(1, 8001, dtype=np.int64), taxa)
    plain = search_index.build(embeddings, "fastscan")
    hooked = search_index.build(embeddings, "fastscan", clustering=search_index.faiss.IndexFlatL2(64))
    assert search_index.faiss.extract_index_ivf(hooked).clustering_index is None
    first = dict(search_index.list_labels(plain))
    second = dict(search_index.list_labels(hooked))
    assert first.keys() == second.keys() and all(np.array_equal(first[n], second[n]) for n in first)
    assert search_index.card_clustering(64) is None  # the CPU wheel here: no card to cluster on


# --- the card itself --------------------------------------------------------------------------------------------------


@pytest.mark.skipif(device.cuda_problem() is not None, reason=f"no usable GPU here: {device.cuda_problem()}")
def test_the_card_answers_as_the_cpu_does():
    embeddings, cpu, world = world_of("steep-gap")
    card = CardVectors(cpu, "cuda")
    queries = np.concatenate([world.text_queries(20, seed=6), world.image_queries(20, seed=6)])
    species = [int(t) for t in np.unique(embeddings.taxon_ids)[:30]]
    for taxa in (None, species):
        for query, hits in zip(queries, card.search_many(queries, k=500, taxon_ids=taxa), strict=True):
            same_answer(hits, cpu.search(query, k=500, taxon_ids=taxa))


def test_a_query_vector_of_other_dimensions_is_refused_with_a_sentence(world):
    """Issue 65: the card's ranker did not check a vector's dimension (torch's own error, or a wrong broadcast)."""
    embeddings, cpu, _ = world
    ranker = CardRanker(embeddings.vectors[:100], embeddings.image_ids[:100], "cpu")
    with pytest.raises(ValueError, match=f"the query vectors have 12 dimensions, the vectors on the card {DIM}"):
        ranker.rank(np.ones((2, 12), dtype=np.float32), 5)
    assert len(ranker.rank(embeddings.vectors[:2], 5)) == 2
