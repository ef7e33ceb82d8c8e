"""A search reads as far as its own results say it must (search/index.py, CHECKED; issue 41).

A small seeded world of bench/realistic.py's `lognormal-flat` shape (30,000 x 256): image-like queries are fresh
images of a genus, text-like ones sit across a modality gap with their best images at cosine about 0.3. The
fast-scan index is built with every default; a spy on `Searcher._candidates` records each reading's breadth.
"""

import numpy as np
import pytest

from bench import realistic
from search import index as search_index
from search.store import Embeddings

COUNT, DIM, K = 30_000, 256, 50


@pytest.fixture(scope="module")
def world():
    vectors, taxa, world = realistic.generate(COUNT, DIM, seed=5, shape="lognormal-flat")
    embeddings = Embeddings(vectors, np.arange(1, COUNT + 1, dtype=np.int64), taxa)
    index = search_index.build(embeddings, "fastscan")
    queries = {"image": world.image_queries(20, seed=3), "text": world.text_queries(20, seed=3)}
    return embeddings, index, queries


def best_ids(embeddings, query, k=K, exclude=()):
    scores = embeddings.vectors.astype(np.float32) @ query
    order = [i for i in np.lexsort((embeddings.image_ids, -scores)) if embeddings.image_ids[i] not in exclude]
    return [int(embeddings.image_ids[i]) for i in order[:k]]


def recall(searcher, embeddings, queries, **options):
    found = [{hit.image_id for hit in searcher.search(q, k=K, **options)} for q in queries]
    return float(np.mean([len(got & set(best_ids(embeddings, q))) / K for got, q in zip(found, queries, strict=True)]))


@pytest.fixture
def readings(monkeypatch):
    """The breadths each search read, in order (one list per search)."""
    log: list[list[search_index.Breadth]] = []
    real = search_index.Searcher._candidates

    def spy(self, vector, breadth, wanted, selector):
        log[-1].append(breadth)
        return real(self, vector, breadth, wanted, selector)

    monkeypatch.setattr(search_index.Searcher, "_candidates", spy)
    return log


def test_an_image_is_read_once_and_a_text_reads_wider_until_its_results_hold(world, readings):
    embeddings, index, queries = world
    searcher = search_index.Searcher(embeddings, index, labels="image_ids")
    assert searcher.adaptive
    for kind in ("image", "text"):
        for query in queries[kind]:
            readings.append([])
            searcher.search(query, k=K)
    once = [len(read) == 1 for read in readings]
    # Images mostly end at their first reading (their first lists hold their best images); texts mostly not.
    assert sum(once[:20]) >= 10 and sum(once[20:]) <= 4, once
    assert all(read[0] == searcher.narrow for read in readings)  # nobody said which was which
    assert all(later.nprobe >= earlier.nprobe and later.rerank >= earlier.rerank
               for read in readings for earlier, later in zip(read, read[1:], strict=False))  # fmt: skip
    assert recall(searcher, embeddings, queries["image"]) >= 0.95
    assert recall(searcher, embeddings, queries["text"]) >= 0.95


def test_past_the_wide_breadth_every_image_is_ranked_exactly(world):
    """Held to 2 lists and 100 candidates, a fixed search loses most of a text's best images; the adaptive one,
    whose wide breadth is then the same, ranks every image instead and misses none."""
    embeddings, index, queries = world
    fixed = search_index.Searcher(embeddings, index, labels="image_ids", nprobe=2, rerank=100)
    assert not fixed.adaptive
    assert recall(fixed, embeddings, queries["text"]) < 0.6
    adaptive = search_index.Searcher(embeddings, index, labels="image_ids", nprobe=2, rerank=100, adaptive=True)
    assert recall(adaptive, embeddings, queries["text"]) == 1.0


def test_a_widened_search_keeps_exclusions_and_pages(world):
    embeddings, index, queries = world
    searcher = search_index.Searcher(embeddings, index, labels="image_ids", nprobe=2, rerank=100, adaptive=True)
    query = queries["text"][0]
    excluded = set(best_ids(embeddings, query, k=10))
    hits = searcher.search(query, k=K, exclude_image_ids=excluded)
    assert [hit.image_id for hit in hits] == best_ids(embeddings, query, exclude=excluded)
    pages = searcher.search(query, k=K) + searcher.search(query, k=K, offset=K)
    assert [hit.image_id for hit in pages] == [hit.image_id for hit in searcher.search(query, k=2 * K)]


def test_the_hint_starts_wide_and_never_lowers_recall(world, readings):
    embeddings, index, queries = world
    searcher = search_index.Searcher(embeddings, index, labels="image_ids")
    readings.append([])
    searcher.search(queries["text"][0], k=K, wide=True)
    assert readings[-1][0] == searcher.wide
    for kind in ("image", "text"):
        hinted = recall(searcher, embeddings, queries[kind], wide=True)
        assert hinted >= recall(searcher, embeddings, queries[kind]) - 0.01
