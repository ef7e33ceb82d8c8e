"""What only a Milvus server does (issue 43): each finding of the first run against Milvus standalone, the
deployment of many processes on one collection, and a server that fails under a running web worker. The server is
conftest's milvus_server (PyPI's `milvus` package: Milvus 2.3 standalone with an embedded etcd, or
QUIRE_TEST_MILVUS_URI). The Lite-and-server pair of every backend test is in test_milvus_backend.py."""

import threading
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer

import numpy as np
import pytest
from pymilvus import DataType, MilvusClient

from bench import realistic
from search import milvus
from search.exceptions import NoIndex, VectorDatabaseUnavailable
from search.store import Embeddings

COUNT, DIM = 6_000, 64
MODEL = "realistic/server"


@pytest.fixture(scope="module")
def world():
    vectors, taxa, world = realistic.generate(COUNT, DIM, seed=8)
    ids = np.arange(1, COUNT + 1, dtype=np.int64) * 11
    order = np.lexsort((ids, taxa))
    return Embeddings(vectors[order], ids[order], taxa[order].astype(np.int64)), world


@pytest.fixture
def server(milvus_server_uri):
    client = MilvusClient(uri=milvus_server_uri, timeout=30)
    yield client
    client.close()


def made_by_hand(client: MilvusClient, *, consistency: str | None, index: str | None, dim: int = DIM) -> str:
    """The model's collection as another program (or an earlier Quire) left it."""
    name = milvus.collection_name(MODEL)
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("image_id", DataType.INT64, is_primary=True)
    schema.add_field("taxon_id", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    client.create_collection(name, schema=schema, **({"consistency_level": consistency} if consistency else {}))
    if index:
        params = client.prepare_index_params()
        params.add_index(field_name="vector", index_type=index, metric_type="IP", params={})
        client.create_index(name, params)
    return name


def insert(client: MilvusClient, name: str, embeddings: Embeddings, rows: slice) -> None:
    batch = milvus.rows_per_request(DIM)
    ids, taxa, vectors = embeddings.image_ids[rows], embeddings.taxon_ids[rows], embeddings.vectors[rows]
    for start in range(0, len(ids), batch):
        part = slice(start, start + batch)
        client.insert(
            name,
            [
                {"image_id": int(i), "taxon_id": int(t), "vector": v.astype(np.float32)}
                for i, t, v in zip(ids[part], taxa[part], vectors[part], strict=True)
            ],
        )


def exact_top(embeddings: Embeddings, query: np.ndarray, k: int = 50) -> set[int]:
    scores = embeddings.vectors.astype(np.float32) @ query
    return set(embeddings.image_ids[np.argsort(-scores)[:k]].tolist())


def recall(backend, embeddings: Embeddings, queries, *, wide: bool) -> float:
    found = [
        len({hit.image_id for hit in backend.search(q, k=50, wide=wide)} & exact_top(embeddings, q)) / 50
        for q in queries
    ]
    return float(np.mean(found))


# Finding 1: an empty id filter was written with int64's least value, which the server's parser refuses.


def test_every_id_of_a_collection_is_read_back(world, server):
    embeddings, _ = world
    milvus.load_store(MODEL, embeddings)
    held = milvus.held_ids(MODEL)  # no ids expected: the "every id" ranges
    assert sorted(held.tolist()) == sorted(embeddings.image_ids.tolist())


# Finding 2: server collections default to Bounded consistency, under which a load did not see its own writes.


def test_a_collection_an_earlier_quire_made_bounded_is_resumed_without_duplicates(world, server):
    """Quire before issue 43 made collections at the server's default, Bounded: rows inserted a moment ago are
    invisible to a Bounded read, and were inserted again (Milvus keeps duplicate primary keys)."""
    embeddings, _ = world
    name = made_by_hand(server, consistency="Bounded", index="FLAT")
    insert(server, name, embeddings, slice(0, 1000))  # a load killed after its first thousand rows
    resumed = milvus.load_store(MODEL, embeddings)
    assert (resumed.added, resumed.total) == (COUNT - 1000, COUNT)
    held = milvus.held_ids(MODEL)
    assert len(held) == len(np.unique(held)) == COUNT


# Finding 3: a load said "searches see them at once" while the server was still indexing.


def test_a_load_returns_once_the_server_has_indexed_what_it_holds(world, server):
    embeddings, _ = world
    seen = []
    loaded = milvus.load_store(
        MODEL, embeddings, index_type="IVF_FLAT", indexing=lambda done, total: seen.append((done, total))
    )
    described = server.describe_index(milvus.collection_name(MODEL), "vector")
    assert int(described["pending_index_rows"]) == 0 and int(described["indexed_rows"]) == COUNT
    assert loaded.ready and loaded.indexed == COUNT and seen[-1] == (COUNT, COUNT)


def test_a_load_that_outwaits_its_limit_says_how_much_is_indexed(world, server):
    """A DISKANN collection on an embedded build (made by hand: Quire refuses to make one there) never gets its
    index: the load stops waiting after its limit and says that nothing is indexed."""
    if not str(server.get_server_version()).endswith("-lite"):
        pytest.skip("this server is not an embedded build: it builds DISKANN")
    embeddings, _ = world
    made_by_hand(server, consistency=None, index="DISKANN")
    loaded = milvus.load_store(MODEL, embeddings, index_wait=3)  # returns, rather than waiting for ever
    assert (loaded.total, loaded.indexed, loaded.ready, loaded.index_type) == (COUNT, 0, False, "DISKANN")


def test_diskann_is_refused_by_an_embedded_server_before_anything_is_made(world, server):
    if not str(server.get_server_version()).endswith("-lite"):
        pytest.skip("this server is not an embedded build: it may build DISKANN")
    with pytest.raises(milvus.IndexRefused, match=r"embedded build\) cannot build DISKANN: choose HNSW or IVF_SQ8"):
        milvus.load_store(MODEL, world[0], index_type="DISKANN")
    assert not server.has_collection(milvus.collection_name(MODEL))


# Finding 4: making a collection was not atomic, and a collection without an index crashed the next load.


def test_an_index_the_server_refuses_leaves_no_collection_behind(world, server):
    with pytest.raises(milvus.IndexRefused, match=r"refuses a GPU_CAGRA index .* Nothing was changed\."):
        milvus.load_store(MODEL, world[0], index_type="GPU_CAGRA")  # a CPU build has no GPU index
    assert not server.has_collection(milvus.collection_name(MODEL))


def test_a_rebuild_with_a_refused_index_keeps_the_collection_searchable(world, server):
    embeddings, world_ = world
    milvus.load_store(MODEL, embeddings)
    with pytest.raises(milvus.IndexRefused, match="GPU_CAGRA"):
        milvus.load_store(MODEL, embeddings, rebuild=True, index_type="GPU_CAGRA")
    assert len(milvus.held_ids(MODEL)) == COUNT
    backend = milvus.open_collection(MODEL, store_dim=DIM)
    assert len(backend.search(world_.image_queries(1, seed=1)[0].astype(np.float32), k=10)) == 10
    backend.close()
    assert not [name for name in server.list_collections() if name.endswith("_check")]


def test_a_collection_without_an_index_is_named_and_the_next_load_indexes_it(world, server):
    embeddings, _ = world
    name = made_by_hand(server, consistency=None, index=None)
    insert(server, name, embeddings, slice(0, 500))
    server.flush(name)
    with pytest.raises(NoIndex, match=r"has no index .* run `manage.py build_index --backend milvus`"):
        milvus.open_collection(MODEL, store_dim=DIM)
    loaded = milvus.load_store(MODEL, embeddings)
    assert (loaded.added, loaded.total, loaded.index_type, loaded.ready) == (COUNT - 500, COUNT, "FLAT", True)
    milvus.open_collection(MODEL, store_dim=DIM).close()


# Finding 5: IVF_PQ's codes ranked the page; AUTOINDEX got no breadth.


def test_ivf_pq_candidates_are_rescored_from_the_stored_vectors(world, server, monkeypatch):
    embeddings, world_ = world
    milvus.load_store(MODEL, embeddings, index_type="IVF_PQ")
    backend = milvus.open_collection(MODEL, store_dim=DIM)
    texts = [q.astype(np.float32) for q in world_.text_queries(12, seed=3)]
    rescored = recall(backend, embeddings, texts, wide=True)
    monkeypatch.setattr(milvus, "candidates", lambda _type, limit, _wide: limit)  # the page and its margin only
    by_codes = recall(backend, embeddings, texts, wide=True)
    backend.close()
    assert rescored >= 0.95 and rescored > by_codes


def test_autoindex_is_read_at_quires_breadths(world, server):
    embeddings, world_ = world
    loaded = milvus.load_store(MODEL, embeddings, index_type="AUTOINDEX")
    backend = milvus.open_collection(MODEL, store_dim=DIM)
    # What is measured is the index: load_store returned once every row is served from a sealed segment with its
    # index loaded (under load, before that, a server reads an interim index: 0.907 once, on a busy machine).
    segments = milvus.connect().list_loaded_segments(milvus.collection_name(MODEL))
    assert loaded.indexed == loaded.total == sum(s.num_rows for s in segments if s.index_id)
    assert (
        loaded.index_type == "AUTOINDEX"
        and "ef" in milvus.search_params("AUTOINDEX", backend.built, 66, True)["params"]
    )
    images = [q.astype(np.float32) for q in world_.image_queries(12, seed=4)]
    texts = [q.astype(np.float32) for q in world_.text_queries(12, seed=4)]
    assert recall(backend, embeddings, images, wide=False) >= 0.95
    assert recall(backend, embeddings, texts, wide=True) >= 0.95
    backend.close()


# Bad input on the server path.


def test_a_collection_dropped_under_an_open_one_is_a_sentence_then_nothing_loaded(world, server):
    embeddings, world_ = world
    milvus.load_store(MODEL, embeddings)
    backend = milvus.open_collection(MODEL, store_dim=DIM)
    server.drop_collection(milvus.collection_name(MODEL))  # an operator, or another deployment's --rebuild
    query = world_.image_queries(1, seed=6)[0].astype(np.float32)
    with pytest.raises(VectorDatabaseUnavailable, match=r"failed to answer .* check that it is running"):
        backend.search(query, k=10)
    assert backend.broken  # the engine opens it again before the next search ...
    backend.close()
    with pytest.raises(NoIndex, match="Nothing is loaded"):  # ... and is told what to run
        milvus.open_collection(MODEL, store_dim=DIM)


def test_a_wrong_port_is_one_sentence(settings):
    """QUIRE_MILVUS_URI naming another service's port (Milvus's own health port, 9091, is the usual slip): an HTTP
    server answers there, not Milvus's gRPC, and the setting is named within the timeout."""
    web = ThreadingHTTPServer(("127.0.0.1", 0), SimpleHTTPRequestHandler)
    serving = threading.Thread(target=web.serve_forever, daemon=True)
    serving.start()
    try:
        settings.QUIRE_MILVUS_URI = f"http://127.0.0.1:{web.server_port}"
        settings.QUIRE_MILVUS_TIMEOUT = 3.0
        with pytest.raises(VectorDatabaseUnavailable) as refused:
            milvus.open_collection(MODEL)
        said = str(refused.value)
        assert f"QUIRE_MILVUS_URI=http://127.0.0.1:{web.server_port}" in said and "\n" not in said
        assert "start it, or fix the setting" in said
    finally:
        web.shutdown()
