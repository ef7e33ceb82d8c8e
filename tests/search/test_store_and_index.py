import numpy as np
import pytest

from search import index as search_index
from search.store import EmbeddingStore, StoreMismatch


def clustered(count: int, dim: int, clusters: int = 20, seed: int = 0) -> np.ndarray:
    """Unit vectors around random centres: like CLIP embeddings, unlike uniform noise."""
    rng = np.random.default_rng(seed)
    centres = rng.normal(size=(clusters, dim))
    vectors = centres[rng.integers(clusters, size=count)] + 0.35 * rng.normal(size=(count, dim))
    return (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float16)


@pytest.fixture
def store(tmp_path):
    vectors = clustered(3000, 32)
    store = EmbeddingStore(tmp_path, "tiny/test", 32)
    ids = np.arange(10_000, 13_000)
    taxa = ids % 7
    for start in range(0, 3000, 1000):
        store.write_part(
            f"chunk-{start}", ids[start : start + 1000], taxa[start : start + 1000], vectors[start : start + 1000]
        )
    store.consolidate()
    return store


def brute_force(embeddings, query, rows=None):
    rows = np.arange(len(embeddings)) if rows is None else rows
    scores = embeddings.vectors[rows].astype(np.float32) @ query
    order = np.lexsort((embeddings.image_ids[rows], -scores))
    return [int(embeddings.image_ids[rows][i]) for i in order]


def test_store_consolidates_parts_into_aligned_arrays(store):
    embeddings = store.load()
    assert embeddings.vectors.dtype == np.float16 and embeddings.vectors.shape == (3000, 32)
    assert isinstance(embeddings.vectors, np.memmap)
    # Ordered by taxon, then image id: each species is one contiguous block of rows.
    order = np.lexsort((embeddings.image_ids, embeddings.taxon_ids))
    assert (order == np.arange(3000)).all() and (embeddings.taxon_ids == embeddings.image_ids % 7).all()
    written = clustered(3000, 32)  # the fixture's vectors, row i for image 10,000 + i
    np.testing.assert_array_equal(embeddings.vectors[:], written[embeddings.image_ids - 10_000])
    assert store.parts() == []
    assert len(store.embedded_image_ids()) == 3000


def test_a_re_embedded_image_keeps_its_newest_vector(store):
    new = np.zeros((1, 32), np.float16)
    new[0, 0] = 1
    store.write_part("retry", [10_005], [3], new)
    assert 10_005 in store.embedded_image_ids()
    assert store.consolidate() == 3000
    embeddings = store.load()
    row = int(np.flatnonzero(embeddings.image_ids == 10_005)[0])
    assert embeddings.vectors[row, 0] == 1 and embeddings.taxon_ids[row] == 3


def test_an_existing_store_opens_with_its_dimension(store, tmp_path):
    assert EmbeddingStore.existing(tmp_path, "tiny/test").dim == 32
    with pytest.raises(FileNotFoundError, match="run `manage.py embed` first"):
        EmbeddingStore.existing(tmp_path, "never/embedded")


def test_another_model_or_dimension_is_refused(store, tmp_path):
    with pytest.raises(StoreMismatch, match="not the configured tiny/test \\(64 dimensions\\)"):
        EmbeddingStore(tmp_path, "tiny/test", 64)
    with pytest.raises(ValueError, match="expected 1 x 32 vectors"):
        store.write_part("bad", [1], [1], np.zeros((1, 16)))


@pytest.fixture
def searcher(store):
    embeddings = store.load()
    return search_index.Searcher(embeddings, search_index.build(embeddings, "flat"))


def query_vector(seed=5, dim=32):
    vector = np.random.default_rng(seed).normal(size=dim)
    return (vector / np.linalg.norm(vector)).astype(np.float32)


def test_exact_search_equals_a_brute_force_ranking(searcher):
    query = query_vector()
    hits = searcher.search(query, k=50)
    assert [hit.image_id for hit in hits] == brute_force(searcher.embeddings, query)[:50]
    assert hits[0].score >= hits[-1].score


def test_taxon_filter_ranks_the_whole_subset_exactly(searcher):
    query = query_vector(6)
    hits = searcher.search(query, k=1000, taxon_ids=[2, 5])
    rows = np.flatnonzero(np.isin(searcher.embeddings.taxon_ids, [2, 5]))
    assert [hit.image_id for hit in hits] == brute_force(searcher.embeddings, query, rows)
    assert {hit.taxon_id for hit in hits} == {2, 5}


def test_pages_concatenate_to_the_full_ranking(searcher):
    query = query_vector(7)
    pages = [hit.image_id for offset in range(0, 200, 50) for hit in searcher.search(query, k=50, offset=offset)]
    assert pages == [hit.image_id for hit in searcher.search(query, k=200)]
    assert len(set(pages)) == 200


def test_excluded_images_are_left_out(searcher):
    query = query_vector(8)
    top = [hit.image_id for hit in searcher.search(query, k=10)]
    rest = [hit.image_id for hit in searcher.search(query, k=8, exclude_image_ids=top[:2])]
    assert rest == top[2:10]


def test_ivfpq_candidates_are_rescored_exactly(store):
    embeddings = store.load()
    index = search_index.build(embeddings, "ivfpq")
    default = search_index.Searcher(embeddings, index)  # as the engine makes it: the kind's own defaults
    assert default.narrow == default.wide == search_index.Breadth(nprobe=32, rerank=500)
    searcher = search_index.Searcher(embeddings, index, nprobe=16, rerank=500)
    assert not searcher.exact
    query = query_vector(9)
    hits = searcher.search(query, k=50)
    truth = brute_force(embeddings, query)[:50]
    assert len(set(hit.image_id for hit in hits) & set(truth)) / 50 >= 0.9
    rows = {int(i): r for r, i in enumerate(embeddings.image_ids)}
    for hit in hits[:5]:  # scores are exact inner products, not PQ estimates
        assert hit.score == pytest.approx(
            float(embeddings.vectors[rows[hit.image_id]].astype(np.float32) @ query), abs=1e-5
        )


def faiss_ivf(index):
    import faiss

    return faiss.extract_index_ivf(index)


def test_ivfpq_leaves_excluded_images_out_inside_faiss(store):
    embeddings = store.load()
    searcher = search_index.Searcher(embeddings, search_index.build(embeddings, "ivfpq"), nprobe=64, rerank=500)
    query = query_vector(10)
    labeled = [hit.image_id for hit in searcher.search(query, k=300)]  # a tenth of the collection labeled
    hits = searcher.search(query, k=50, exclude_image_ids=labeled)
    assert len(hits) == 50 and not {hit.image_id for hit in hits} & set(labeled)
    # Against the exact ranking of what is left: nearly the same 50.
    truth = [i for i in brute_force(embeddings, query) if i not in set(labeled)][:50]
    assert len({hit.image_id for hit in hits} & set(truth)) / 50 >= 0.9
    assert searcher.search(query, k=5, exclude_image_ids=[10**12]) == searcher.search(query, k=5)  # unknown ids


def test_index_is_saved_swapped_and_checked_against_the_store(store, tmp_path):
    embeddings = store.load()
    folder = tmp_path / "indexes"
    with pytest.raises(search_index.NoIndex, match="manage.py build_index"):
        search_index.load(folder)
    search_index.save(search_index.build(embeddings, "flat"), folder, kind="flat", count=len(embeddings))
    second = search_index.save(search_index.build(embeddings, "flat"), folder, kind="flat", count=len(embeddings))
    index, info = search_index.load(folder)
    assert info["file"] == second.name and index.ntotal == 3000
    assert not index.codes.is_owned  # memory-mapped: workers share the page cache
    query = query_vector(3)
    assert [h.image_id for h in search_index.Searcher(embeddings, index).search(query, k=20)] == brute_force(
        embeddings, query
    )[:20]
    with pytest.raises(search_index.NoIndex, match="run `manage.py build_index` again"):
        search_index.Searcher(store.load(), _small_index())
    with pytest.raises(ValueError, match="33 dimensions"):
        search_index.Searcher(embeddings, index).search(np.ones(33, np.float32))


def _small_index():
    import faiss

    index = faiss.IndexFlatIP(32)
    index.add(np.ones((3, 32), np.float32))
    return index


def test_choose_kind(monkeypatch):
    assert search_index.choose_kind(10_000) == "flat"
    assert search_index.choose_kind(5_000_000) == "fastscan"
    # Also where faiss-gpu sees a GPU: Quire reads the flat index on the CPU, where 5M exact is slow.
    monkeypatch.setattr(search_index.faiss, "get_num_gpus", lambda: 1)
    assert search_index.choose_kind(5_000_000) == "fastscan"
    assert search_index.choose_kind(100_000, "ivfpq") == "ivfpq"
    with pytest.raises(ValueError, match="auto, flat, fastscan or ivfpq"):
        search_index.choose_kind(10, "hnsw")


def exact_top(vectors, rows, query, k):
    """numpy's ranking of `rows` by score, then row: the reference for FAISS's in-place scan."""
    scores = vectors[rows].astype(np.float32) @ query
    order = np.lexsort((rows, -scores))[:k]
    return rows[order], scores[order]


@pytest.mark.parametrize("layout", ["one run", "many runs", "scattered"])
def test_the_in_place_scan_finds_the_exact_top_k(layout):
    """FAISS's float16 scan over the memory map's row ranges (split over two threads when large) returns
    the same top k as scoring every row with numpy, for a species (one run), several species, or rows
    scattered one by one (gathered first)."""
    vectors = clustered(30_000, 32, seed=3)
    rng = np.random.default_rng(1)
    rows = {
        "one run": np.arange(4_000, 13_000),
        "many runs": np.concatenate([np.arange(s, s + 700) for s in range(0, 28_000, 2_000)]),
        "scattered": np.sort(rng.choice(30_000, size=6_000, replace=False)),
    }[layout]
    query = clustered(1, 32, seed=9)[0].astype(np.float32)
    scores, found = search_index.top_rows(vectors, rows, query, 60)
    expected_rows, expected_scores = exact_top(vectors, rows, query, 60)
    order = np.lexsort((found, -scores))
    assert found[order].tolist() == expected_rows.tolist()
    np.testing.assert_allclose(scores[order], expected_scores, rtol=1e-5, atol=1e-6)


def test_runs_split_in_two_cover_every_row_once():
    runs = [(0, 10), (20, 25), (40, 100)]
    first, second = search_index._split(runs, 30)
    assert sum(e - s for s, e in first) == 30 and first[-1] == (40, 55) and second == [(55, 100)]
    assert search_index._split(runs, 15) == ([(0, 10), (20, 25)], [(40, 100)])


@pytest.fixture
def species_store(tmp_path):
    """20,000 images of 4 species, ordered by taxon as consolidation leaves them, with duplicated vectors
    (exact ties) so that ties at the cut are exercised."""
    vectors = clustered(20_000, 32, seed=4)
    vectors[1:200:2] = vectors[0:200:2]  # pairs of identical vectors: tied scores
    store = EmbeddingStore(tmp_path, "tiny/species", 32)
    ids = np.arange(50_000, 70_000)
    store.write_part("all", ids, ids % 4, vectors)
    store.consolidate()
    return store


def test_a_species_filter_pages_through_the_exact_ranking_with_exclusions(species_store):
    embeddings = species_store.load()
    searcher = search_index.Searcher(embeddings, search_index.build(embeddings, "flat"))
    query = embeddings.vectors[3].astype(np.float32)  # one of the tied pairs is near the top
    rows = searcher.rows_of_taxa([embeddings.taxon_ids[3], (embeddings.taxon_ids[3] + 1) % 4])
    assert len(rows) >= 2 * search_index.SCAN_MINIMUM  # the two-thread scan
    excluded = embeddings.image_ids[rows][::7][:800]  # labeled images, inside the subset
    labeled = set(excluded.tolist())
    kept = rows[~np.isin(embeddings.image_ids[rows], excluded)]
    expected = brute_force(embeddings, query, kept)
    taxa = {int(embeddings.taxon_ids[3]), int((embeddings.taxon_ids[3] + 1) % 4)}
    pages = [
        [hit.image_id for hit in searcher.search(query, k=50, offset=offset, taxon_ids=taxa, exclude_image_ids=labeled)]
        for offset in (0, 50, 100)
    ]
    assert sum(pages, []) == expected[:150]


def test_fastscan_candidates_are_rescored_exactly_and_leave_exclusions_out(store):
    """The fast-scan index (labels: image ids) proposes candidates; the scores are the store's exact ones."""
    embeddings = store.load()
    index = search_index.build(embeddings, "fastscan")
    assert "RaBitQfs" in search_index._fastscan_factory(len(embeddings), 32)
    assert "x4fs" in search_index._fastscan_factory(len(embeddings), 32, codes="pq4")
    searcher = search_index.Searcher(embeddings, index, labels="image_ids", nprobe=8)
    query = query_vector(9)
    hits = searcher.search(query, k=50)
    truth = brute_force(embeddings, query)
    assert len({hit.image_id for hit in hits} & set(truth[:50])) / 50 >= 0.9
    rows = {int(i): r for r, i in enumerate(embeddings.image_ids)}
    for hit in hits[:5]:
        assert hit.score == pytest.approx(
            float(embeddings.vectors[rows[hit.image_id]].astype(np.float32) @ query), abs=1e-5
        )
    labeled = set(truth[:100])
    rest = searcher.search(query, k=50, exclude_image_ids=labeled)
    assert not {hit.image_id for hit in rest} & labeled
    left = [i for i in truth if i not in labeled][:50]
    assert len({hit.image_id for hit in rest} & set(left)) / 50 >= 0.9


def test_new_images_join_a_trained_fastscan_index_in_place(store, tmp_path):
    """An embedding job's new images are added without retraining, whatever order consolidation gives the
    store's rows; removed images leave; past RETRAIN_GROWTH x the trained size it asks for a rebuild."""
    embeddings = store.load()
    folder = tmp_path / "indexes"
    search_index.save(search_index.build(embeddings, "fastscan"), folder, kind="fastscan", count=len(embeddings))
    index, info = search_index.load(folder)
    assert info["labels"] == "image_ids" and info["trained_on"] == 3000
    # 900 new images, in new taxa that consolidation sorts between the old ones.
    store.write_part("new", np.arange(20_000, 20_900), np.arange(900) % 7, clustered(900, 32, seed=8))
    store.consolidate()
    grown = store.load()
    assert search_index.update(index, info, grown) == (900, 0)
    assert index.ntotal == 3900
    assert search_index.indexed_ids(index).tolist() == sorted(grown.image_ids.tolist())
    searcher = search_index.Searcher(grown, index, labels="image_ids", nprobe=8)
    newcomer = grown.vectors[int(np.flatnonzero(grown.image_ids == 20_450)[0])].astype(np.float32)
    assert searcher.search(newcomer, k=1)[0].image_id == 20_450  # found through the index
    assert search_index.update(index, info, grown) == (0, 0)  # nothing to do twice
    fewer = type(grown)(grown.vectors[100:], grown.image_ids[100:], grown.taxon_ids[100:])
    assert search_index.update(index, info, fewer) == (0, 100) and index.ntotal == 3800  # images removed
    # A collection past twice the trained size: rebuild.
    store.write_part("more", np.arange(30_000, 33_000), np.zeros(3000), clustered(3000, 32, seed=11))
    store.consolidate()
    assert search_index.update(index, info, store.load()) is None
