"""The Milvus backend against the real engine, beside FAISS flat on the same vectors, each test that takes `uri`
twice: on Milvus Lite (Milvus's server binary behind a file, one process) and on a Milvus standalone server
(conftest's milvus_server: PyPI's `milvus` package, or QUIRE_TEST_MILVUS_URI). The vectors are shaped like CLIP's
(bench/realistic.py: Zipf genera, anisotropic spreads, near-duplicates, text queries across the modality gap)."""

import os
import signal
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from bench import realistic
from search import index as search_index
from search import lookalikes, milvus
from search.backends import FaissVectors
from search.exceptions import NoIndex, SearchError, StoreMismatch, VectorDatabaseUnavailable
from search.store import Embeddings

ROOT = Path(__file__).resolve().parents[2]
COUNT, DIM = 6_000, 64
MODEL = "realistic/test"


@pytest.fixture(scope="module")
def world():
    vectors, taxa, world = realistic.generate(COUNT, DIM, seed=3)
    ids = np.arange(100, 100 + COUNT, dtype=np.int64) * 7  # ids are not rows
    order = np.lexsort((ids, taxa))  # the store's order: by taxon, then id
    embeddings = Embeddings(vectors[order], ids[order], taxa[order].astype(np.int64))
    return embeddings, world


@pytest.fixture
def lite_uri(settings, tmp_path):
    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")
    # Milvus Lite starts a server process for its file; on a loaded 2-core CI machine that once took longer than
    # the 10 s default (2026-11-28: "Fail connecting to server on unix:...sock"), which is not what these test.
    settings.QUIRE_MILVUS_TIMEOUT = 30.0
    return settings.QUIRE_MILVUS_URI


@pytest.fixture(params=["lite", pytest.param("server", marks=pytest.mark.slow)])
def uri(request):
    """Each test that takes it runs twice: on a Milvus Lite file, and on a Milvus standalone server (conftest)."""
    return request.getfixturevalue("lite_uri" if request.param == "lite" else "milvus_server_uri")


@pytest.fixture
def both(world, uri):
    """(FAISS flat, Milvus FLAT) over the same embeddings."""
    embeddings, _ = world
    loaded = milvus.load_store(MODEL, embeddings)
    assert (loaded.added, loaded.removed, loaded.total, loaded.index_type) == (COUNT, 0, COUNT, "FLAT")
    flat = FaissVectors(search_index.Searcher(embeddings, search_index.build(embeddings, "flat")))
    backend = milvus.open_collection(MODEL, store_dim=DIM)
    yield flat, backend
    backend.close()


def same_up_to_ties(expected, got, tolerance=1e-5):
    """The same images at the same ranks, with the same scores, except that images whose scores tie (within
    float rounding) may come in either order."""
    assert len(got) == len(expected)
    np.testing.assert_allclose([hit.score for hit in got], [hit.score for hit in expected], atol=tolerance)
    scores = np.array([hit.score for hit in expected])
    for rank, (want, have) in enumerate(zip(expected, got, strict=True)):
        tied = np.abs(scores - scores[rank]) <= tolerance
        if tied.sum() == 1:
            assert (have.image_id, have.taxon_id) == (want.image_id, want.taxon_id), f"rank {rank}"
        else:
            assert have.image_id in {hit.image_id for hit, tie in zip(expected, tied, strict=True) if tie}


def test_milvus_ranks_as_faiss_flat_for_images_texts_filters_exclusions_and_pages(world, both):
    embeddings, world_ = world
    flat, backend = both
    queries = [*world_.image_queries(6, seed=5), *world_.text_queries(6, seed=5)]
    big_taxa = np.unique(embeddings.taxon_ids, return_counts=True)
    taxa = big_taxa[0][np.argsort(-big_taxa[1])[:3]].tolist()
    for query in queries:
        query = query.astype(np.float32)
        top = flat.search(query, k=200)
        excluded = [hit.image_id for hit in top[:40:3]] + [123_456_789]  # labeled ones, and an unknown id
        for arguments in (
            {"k": 50},
            {"k": 25, "offset": 75},  # a later page
            {"k": 30, "taxon_ids": taxa},  # a species filter, exact inside Milvus
            {"k": 30, "taxon_ids": taxa, "exclude_image_ids": excluded},
            {"k": 50, "exclude_image_ids": excluded},
            {"k": 20, "wide": True},
        ):
            same_up_to_ties(flat.search(query, **arguments), backend.search(query, **arguments))
        # Filters are exact: every hit of the taxa, none excluded, and all the taxa's images when asked deep.
        filtered = backend.search(query, k=COUNT, taxon_ids=taxa[:1], exclude_image_ids=excluded)
        wanted = set(embeddings.image_ids[embeddings.taxon_ids == taxa[0]].tolist()) - set(excluded)
        assert {hit.image_id for hit in filtered} == wanted and len(filtered) == len(wanted)
    assert backend.search(queries[0], k=10, taxon_ids=[]) == [] == flat.search(queries[0], k=10, taxon_ids=[])
    assert backend.search(queries[0], k=10, taxon_ids=[-5]) == [] == flat.search(queries[0], k=10, taxon_ids=[-5])


def test_a_web_workers_threads_search_one_open_collection_at_once(world, both):
    """gunicorn's threads share the process's collection (one gRPC channel): answers do not mix."""
    from concurrent.futures import ThreadPoolExecutor

    _, world_ = world
    _, backend = both
    queries = [q.astype(np.float32) for q in (*world_.image_queries(6, seed=11), *world_.text_queries(6, seed=11))]

    def ranking(query):
        return [hit.image_id for hit in backend.search(query, k=20, exclude_image_ids=[7 * 100])]

    alone = [ranking(query) for query in queries]
    with ThreadPoolExecutor(8) as pool:
        together = list(pool.map(ranking, queries * 4))
    assert together == alone * 4 and len({tuple(r) for r in alone}) == len(queries)


def test_fetch_gives_the_stores_numbers_in_the_order_asked(world, both):
    embeddings, _ = world
    flat, backend = both
    asked = np.array([embeddings.image_ids[17], 5, embeddings.image_ids[3], embeddings.image_ids[17]])
    for fetched in (flat.fetch(asked), backend.fetch(asked)):
        assert fetched.found.tolist() == [True, False, True, True]
        np.testing.assert_array_equal(fetched.vectors, embeddings.vectors[[17, 3, 17]])
        assert fetched.vectors.dtype == np.float16
        assert fetched.taxon_ids.tolist() == embeddings.taxon_ids[[17, 3, 17]].tolist()
    assert backend.fetch(np.empty(0, dtype=np.int64)).vectors.shape == (0, DIM)


def test_a_sample_of_the_collection_reads_the_same_look_alike_rule_on_both(world, both):
    """search/lookalikes.py reads a sample of each backend's vectors: rows of the store, and on these CLIP-shaped
    vectors both samples say the same: the fixed near-duplicate cosine."""
    embeddings, _ = world
    flat, backend = both
    stored = {row.tobytes() for row in embeddings.vectors.astype(np.float32)}
    for sampled in (flat.sample(500), backend.sample(500)):
        assert sampled.shape == (500, DIM) and sampled.dtype == np.float32
        assert len({row.tobytes() for row in sampled}) == 500 and all(row.tobytes() in stored for row in sampled)
        rule = lookalikes.calibrate(sampled)
        assert rule.stacks and rule.threshold == lookalikes.NEAR_DUPLICATE
    assert len(flat.sample(COUNT * 2)) == COUNT  # never more than there is


def test_adds_and_deletes_are_in_the_next_search_of_an_open_collection(world, uri):
    embeddings, world_ = world
    first = Embeddings(embeddings.vectors[:4000], embeddings.image_ids[:4000], embeddings.taxon_ids[:4000])
    milvus.load_store(MODEL, first)
    backend = milvus.open_collection(MODEL)
    query = world_.image_queries(1, seed=9)[0].astype(np.float32)
    flat = FaissVectors(search_index.Searcher(embeddings, search_index.build(embeddings, "flat")))
    before = {hit.image_id for hit in backend.search(query, k=COUNT)}
    assert before == set(first.image_ids.tolist())

    # An embedding job's new images: only they are inserted, and the open collection ranks them at once.
    added = milvus.load_store(MODEL, embeddings)
    assert (added.added, added.removed, added.total) == (COUNT - 4000, 0, COUNT)
    same_up_to_ties(flat.search(query, k=100), backend.search(query, k=100))

    # Images gone from the store (deleted from the catalog) leave the collection, and the next search.
    keep = np.ones(COUNT, dtype=bool)
    keep[::5] = False
    fewer = Embeddings(embeddings.vectors[keep], embeddings.image_ids[keep], embeddings.taxon_ids[keep])
    removed = milvus.load_store(MODEL, fewer)
    assert (removed.added, removed.removed, removed.total) == (0, COUNT - keep.sum(), keep.sum())
    assert {hit.image_id for hit in backend.search(query, k=COUNT)} == set(fewer.image_ids.tolist())
    assert not backend.fetch(embeddings.image_ids[~keep][:3]).found.any()
    backend.close()


def test_a_load_stopped_half_way_resumes_without_duplicates(world, uri):
    embeddings, _ = world

    class Stopped(Exception):
        pass

    batch = milvus.rows_per_request(DIM)

    def stop_after_two_batches(done, total):
        if done >= 2 * batch:
            raise Stopped

    with pytest.raises(Stopped):
        milvus.load_store(MODEL, embeddings, progress=stop_after_two_batches)
    assert len(milvus.held_ids(MODEL)) == 2 * batch
    seen = []
    resumed = milvus.load_store(MODEL, embeddings, progress=lambda done, total: seen.append((done, total)))
    assert resumed.added == COUNT - 2 * batch and resumed.total == COUNT
    assert seen[-1] == (COUNT - 2 * batch,) * 2
    held = milvus.held_ids(MODEL)
    assert len(held) == COUNT and sorted(held.tolist()) == sorted(embeddings.image_ids.tolist())


KILLED_LOAD = """
import sys, django
django.setup()
import numpy as np
from search import lookalikes, milvus
from search.store import Embeddings
data = np.load(sys.argv[1])
embeddings = Embeddings(data["vectors"], data["image_ids"], data["taxon_ids"])
milvus.load_store(sys.argv[2], embeddings, progress=lambda done, total: print(done, flush=True))
print("finished", flush=True)
"""


def test_a_load_killed_by_the_system_resumes_without_duplicates(world, uri, tmp_path):
    """A real crash: the loading process is killed (SIGKILL) after its first batch, then the load runs again."""
    embeddings, _ = world
    data = tmp_path / "store.npz"
    np.savez(data, vectors=embeddings.vectors, image_ids=embeddings.image_ids, taxon_ids=embeddings.taxon_ids)
    environment = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings", "QUIRE_MILVUS_URI": uri}
    loading = subprocess.Popen(
        [sys.executable, "-c", KILLED_LOAD, str(data), MODEL], cwd=ROOT, env=environment,
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    first = loading.stdout.readline()
    loading.send_signal(signal.SIGKILL)
    loading.wait(timeout=60)
    assert first.strip() == str(milvus.rows_per_request(DIM)), "the load was to be killed after its first batch"
    already = len(milvus.held_ids(MODEL))
    resumed = milvus.load_store(MODEL, embeddings)
    assert resumed.added == COUNT - already and resumed.total == COUNT
    held = milvus.held_ids(MODEL)
    assert len(held) == len(np.unique(held)) == COUNT


def test_a_collection_of_other_dimensions_is_refused_and_kept(world, uri):
    embeddings, _ = world
    small = Embeddings(
        np.ascontiguousarray(embeddings.vectors[:300, :16]), embeddings.image_ids[:300], embeddings.taxon_ids[:300]
    )
    milvus.load_store(MODEL, small)
    with pytest.raises(StoreMismatch) as refused:
        milvus.load_store(MODEL, embeddings)
    said = str(refused.value)
    assert "holds 16-dimensional vectors but realistic/test gives 64" in said and f"QUIRE_MILVUS_URI={uri}" in said
    with pytest.raises(StoreMismatch, match="16-dimensional"):
        milvus.open_collection(MODEL, store_dim=DIM)
    assert len(milvus.held_ids(MODEL)) == 300  # nothing was changed
    rebuilt = milvus.load_store(MODEL, embeddings, rebuild=True)
    assert (rebuilt.added, rebuilt.total) == (COUNT, COUNT)


def test_nothing_loaded_yet_says_what_to_run(uri):
    with pytest.raises(NoIndex, match=r"Nothing is loaded .* run `manage.py build_index --backend milvus`"):
        milvus.open_collection(MODEL)


@pytest.mark.parametrize(
    "address, message",
    [
        ("http://127.0.0.1:1", "cannot be reached"),
        ("{tmp}/no/such/folder/vectors.db", "does not exist"),
        ("{tmp}/vectors.sqlite", "neither a Milvus Lite file"),
    ],
)
def test_an_address_that_cannot_be_opened_gets_one_sentence_naming_the_setting(settings, tmp_path, address, message):
    settings.QUIRE_MILVUS_URI = address.format(tmp=tmp_path)
    with pytest.raises(VectorDatabaseUnavailable) as refused:
        milvus.open_collection(MODEL)
    said = str(refused.value)
    assert message in said and f"QUIRE_MILVUS_URI={settings.QUIRE_MILVUS_URI}" in said and "\n" not in said


def test_a_server_that_accepts_but_never_answers_is_given_up_on_after_the_timeout(settings):
    """A hung server (or a firewall that swallows packets): the connection is given up after QUIRE_MILVUS_TIMEOUT
    with the same sentence, instead of holding the caller."""
    import socket

    with socket.socket() as silent:
        silent.bind(("127.0.0.1", 0))
        silent.listen(8)
        settings.QUIRE_MILVUS_URI = f"http://127.0.0.1:{silent.getsockname()[1]}"
        settings.QUIRE_MILVUS_TIMEOUT = 1.0
        with pytest.raises(
            VectorDatabaseUnavailable, match=r"QUIRE_MILVUS_URI=http://127\.0\.0\.1:\d+ cannot be reached"
        ):
            milvus.open_collection(MODEL)


def test_a_lite_file_another_process_holds_is_named(world, lite_uri):
    uri = lite_uri
    holder = subprocess.Popen(
        [sys.executable, "-c", "import sys, time; from pymilvus import MilvusClient; MilvusClient(sys.argv[1]);"
         "print('open', flush=True); time.sleep(60)", uri],
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
    )  # fmt: skip
    try:
        assert holder.stdout.readline().strip() == "open"
        with pytest.raises(VectorDatabaseUnavailable, match="most often another process has the file open"):
            milvus.load_store(MODEL, world[0])
    finally:
        holder.kill()
        holder.wait()


OPENS_THE_FILE = "import sys; from pymilvus import MilvusClient; print(MilvusClient(sys.argv[1]).list_collections())"


def opens_in_another_process(uri: str) -> bool:
    done = subprocess.run([sys.executable, "-c", OPENS_THE_FILE, uri], capture_output=True, text=True, timeout=120)
    return done.returncode == 0


def test_a_load_lets_go_of_a_lite_file_unless_a_collection_here_still_searches_it(world, lite_uri):
    uri = lite_uri
    """pymilvus keeps a Milvus Lite server (and the file's lock) for the process's life. After a load (a Celery
    worker's, a command's) nothing here holds the file, so the web server can open it; while a collection is
    open here, the load leaves its server running."""
    embeddings, world_ = world
    milvus.load_store(MODEL, embeddings)
    assert opens_in_another_process(uri)
    backend = milvus.open_collection(MODEL)
    milvus.load_store(MODEL, embeddings)  # an embedding job's build, beside a searching web worker
    query = world_.image_queries(1, seed=2)[0].astype(np.float32)
    assert len(backend.search(query, k=10)) == 10  # still served
    assert not opens_in_another_process(uri)  # and so still held
    backend.close()
    backend.close()  # closing twice is closing once
    milvus.load_store(MODEL, embeddings)
    assert opens_in_another_process(uri)


def test_a_search_deeper_than_milvus_answers_is_refused_with_its_reason(both):
    _, backend = both
    with pytest.raises(SearchError, match="ranks at most 16,368 images deep"):
        backend.search(np.ones(DIM, dtype=np.float32) / 8, k=100, offset=16_300)


def test_an_approximate_index_is_built_with_quires_parameters_and_read_at_two_breadths(world, uri):
    """IVF_FLAT: the lists Quire chose reach Milvus; the breadths are shares of the lists each segment has (a
    server clamps nlist to a segment's rows / 39), and a text reads more of them than an image. (Milvus Lite builds
    IVF_FLAT but answers every nprobe alike, bench/RESULTS.md. The hits are the collection's, scored exactly.)"""
    embeddings, world_ = world
    loaded = milvus.load_store(MODEL, embeddings, index_type="IVF_FLAT")
    assert loaded.index_type == "IVF_FLAT" and loaded.indexed == loaded.total == COUNT
    chosen = milvus.index_params("IVF_FLAT", COUNT, DIM)["nlist"]
    client = milvus.connect()
    described = client.describe_index(milvus.collection_name(MODEL), "vector")
    largest = milvus._largest_segment(client, uri, milvus.collection_name(MODEL))
    client.close()
    assert (described["index_type"], int(described["nlist"])) == ("IVF_FLAT", chosen)
    backend = milvus.open_collection(MODEL)
    assert backend.index_type == "IVF_FLAT" and int(backend.built["nlist"]) == chosen
    lists = backend.built["lists"]
    if uri.startswith("http"):  # a server: its segments were sealed and indexed before load_store returned
        assert largest and lists == min(chosen, largest // milvus.ROWS_PER_LIST) < chosen
    else:
        assert largest is None and lists == chosen
    narrow = milvus.search_params("IVF_FLAT", backend.built, 66, wide=False)["params"]["nprobe"]
    wide = milvus.search_params("IVF_FLAT", backend.built, 66, wide=True)["params"]["nprobe"]
    assert narrow < wide <= lists
    query = world_.text_queries(1, seed=4)[0].astype(np.float32)
    hits = backend.search(query, k=50, wide=True)
    rows = {int(image_id): row for row, image_id in enumerate(embeddings.image_ids)}
    exact = [float(embeddings.vectors[rows[hit.image_id]].astype(np.float32) @ query) for hit in hits]
    assert len(hits) == 50 and np.allclose([hit.score for hit in hits], exact, atol=1e-5)
    assert [hit.score for hit in hits] == sorted((hit.score for hit in hits), reverse=True)
    backend.close()
    with pytest.raises(ValueError, match="QUIRE_MILVUS_INDEX is 'SCANN2'"):
        milvus.load_store(MODEL, embeddings, rebuild=True, index_type="SCANN2")
