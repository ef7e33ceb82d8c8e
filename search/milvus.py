"""The Milvus backend: the collection's vectors in a Milvus collection, searched by every web worker alike.

QUIRE_MILVUS_URI names either a Milvus Lite file (ending .db: pymilvus starts the `milvus-lite` package's
Milvus server binary as a child of the process that opens it; one process may open a file at a time) or a
server (http://host:19530: Milvus standalone, or a distributed cluster). One collection per model, `collection_name`:

  image_id  INT64, the primary key (Quire's image id)
  taxon_id  INT64, a scalar field: species filters are `taxon_id in [...]`, filtered inside Milvus
  vector    FLOAT_VECTOR, the store's float16 numbers widened (exactly: every float16 is a float32)

A search asks Milvus for the page and a margin, with each candidate's vector, and scores the candidates
again with the FAISS backend's kernel (search.index.inner_products over the same float16 numbers): the
scores are then the FAISS backend's to float rounding, and ties are broken by image id however Milvus
ordered them. With the FLAT index (the default) Milvus ranks exactly, so the rankings equal FAISS flat's; the
approximate index types a server offers are INDEX_TYPES, built with `index_params`.

`load_store` brings a collection up to date with the store (what `manage.py build_index --backend milvus`
runs): it inserts only the images the collection lacks, so a load killed half-way resumes where it
stopped, without duplicates, and an embedding job's new images are added the same way.
"""

import hashlib
import math
import re
import threading
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from pymilvus import DataType, MilvusClient
from pymilvus.exceptions import MilvusException

from . import lite_file
from .backends import Fetched
from .exceptions import NoIndex, SearchError, StoreMismatch, VectorDatabaseUnavailable
from .index import inner_products
from .results import Hit
from .spec import model_slug
from .store import Embeddings

# milvus-lite 2.5 (which pymilvus imports on opening a .db file) imports pkg_resources, which warns that it is
# deprecated (setuptools is pinned below the release that drops it, requirements-common.txt): the warning is
# for milvus-lite's maintainers, not for Quire's users.
warnings.filterwarnings("ignore", message="pkg_resources is deprecated", category=UserWarning)

# Milvus servers answer at most 16,384 results a search (the topK limit of their quotaAndLimits).
MAX_DEPTH = 16_384
# Candidates asked for beyond the page: rows whose scores tie at the cut are then all seen and ordered by id.
MARGIN = 16
# Vectors a request carries (an insert, a fetch): half a megabyte, 128 at 1,024 dimensions. Milvus Lite's time per
# request grows much faster than its size: 1,024-d rows inserted 12,300 a second in requests of 125, 2,800 in
# requests of 1,000 and 360 in requests of 2,000; fetching 1,000 took 46 ms in requests of 125 and 607 ms in one.
REQUEST_BYTES = 512 * 1024


def rows_per_request(dim: int) -> int:
    return max(1, REQUEST_BYTES // (4 * dim))


# The index `manage.py build_index --backend milvus` creates (QUIRE_MILVUS_INDEX: index_params), and what a search
# reads of it (search_params), lists counted at build time. Narrow is for an image's own vector, wide for texts
# and fitted vectors, off the images' distribution (the FAISS index's two breadths, search/index.py: 2% of the
# lists, at least 40, and a quarter, at least 160).
# Parameter names as Milvus documents them (milvus.io/docs/index.md). Milvus Lite ranks FLAT exactly; it builds
# IVF_FLAT with these lists but answers every nprobe alike (recall@50 0.72 at 1M, bench/RESULTS.md), so the
# breadths are for a server, where they are starting points to measure (docs/vector-backends.md).
INDEX_TYPES = ("FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "HNSW", "DISKANN", "GPU_CAGRA", "AUTOINDEX")


def _lists(count: int) -> int:
    return max(1, min(65_536, int(4 * math.sqrt(max(count, 1)))))


def index_params(index_type: str, count: int, dim: int) -> dict[str, Any]:
    """The build parameters of `index_type` for `count` vectors of `dim` dimensions."""
    if index_type in ("IVF_FLAT", "IVF_SQ8"):
        return {"nlist": _lists(count)}
    if index_type == "IVF_PQ":  # one byte for each 8 dimensions: 128 bytes a vector at 1,024
        return {"nlist": _lists(count), "m": max(1, dim // 8), "nbits": 8}
    if index_type == "HNSW":
        return {"M": 32, "efConstruction": 256}
    if index_type == "GPU_CAGRA":
        return {"intermediate_graph_degree": 64, "graph_degree": 32}
    return {}


def search_params(index_type: str, built: dict[str, Any], limit: int, wide: bool) -> dict[str, Any]:
    """What a search of `limit` results reads of an index built with `built`."""
    params: dict[str, Any] = {}
    if index_type.startswith("IVF"):
        lists = int(built.get("nlist", 1))
        params["nprobe"] = min(lists, max(160, lists // 4) if wide else max(40, lists // 50))
    elif index_type == "HNSW":
        params["ef"] = max(limit, 1024 if wide else 256)
    elif index_type == "DISKANN":
        params["search_list"] = max(limit, 1000 if wide else 200)
    elif index_type == "GPU_CAGRA":
        params["itopk_size"] = max(limit, 512 if wide else 128)
    return {"metric_type": "IP", "params": params}


def collection_name(model_name: str) -> str:
    """The collection of one model's vectors: letters, digits and underscores, as Milvus allows, and a
    hash of the whole name so that two models whose names differ only in punctuation never share one."""
    slug = re.sub(r"[^A-Za-z0-9_]+", "_", model_slug(model_name)).strip("_")[:180]
    return f"quire_{slug}_{hashlib.sha256(model_name.encode()).hexdigest()[:10]}"


def where() -> str:
    """The database as the setting names it, for messages."""
    return f"QUIRE_MILVUS_URI={settings.QUIRE_MILVUS_URI}"


# Open collections per Milvus Lite file in this process. pymilvus starts one Milvus Lite server per file and
# process and keeps it (and the file's lock) until the process ends, even when every client is closed; a load
# (a Celery worker's, a command's) stops it when nothing here searches the file, so that the web server can
# open the file after it.
_searching: Counter[str] = Counter()
_searching_lock = threading.Lock()


def _let_go(uri: str) -> None:
    """Stop this process's Milvus Lite server for the file `uri` unless a collection here still searches it."""
    if not uri.endswith(".db"):
        return  # a server: nothing of it runs here
    with _searching_lock:
        if _searching[uri]:
            return
        from milvus_lite.server_manager import server_manager_instance

        server_manager_instance.release_server(uri)
        lite_file.let_go(uri)


def _client(timeout: float) -> MilvusClient:
    uri = settings.QUIRE_MILVUS_URI
    taken = lite_file.hold(uri, where())  # a Lite file: this process's alone, and Milvus Lite's
    try:
        return MilvusClient(uri=uri, token=settings.QUIRE_MILVUS_TOKEN, timeout=timeout)
    except Exception:
        if taken:  # nothing of ours opened it: the next try, here or elsewhere, starts clean
            lite_file.let_go(uri)
        raise


def connect() -> MilvusClient:
    """A client of QUIRE_MILVUS_URI; VectorDatabaseUnavailable (one sentence naming the setting) when it
    cannot be opened or reached."""
    try:
        return _client(settings.QUIRE_MILVUS_TIMEOUT)
    except MilvusException as error:
        raise VectorDatabaseUnavailable(_why_not_open(settings.QUIRE_MILVUS_URI, error)) from None


def problem(timeout: float) -> str | None:
    """The class of the error met asking the database for its collections within `timeout` seconds, or None."""
    try:
        client = _client(timeout)
        try:
            client.list_collections(timeout=timeout)
        finally:
            client.close()
    except Exception as error:  # any failure means unhealthy; say which kind
        return type(error).__name__
    return None


def _why_not_open(uri: str, error: MilvusException) -> str:
    said = f"{error.message} {error.__cause__ or ''} {error.__context__ or ''}"
    if "is illegal" in said:
        return (
            f"{where()} is neither a Milvus Lite file (a path ending in .db) nor a server address "
            "(http://host:19530): fix the setting."
        )
    if "not exists" in said:
        return f"The folder of the Milvus Lite file {where()} does not exist: create it, or fix the setting."
    if "Open local milvus failed" in said:  # pymilvus keeps no cause; a lock held elsewhere is what it was here
        return (
            f"Milvus Lite cannot open {where()}: most often another process has the file open, and Milvus Lite "
            "serves one process at a time, so stop that process, or run a Milvus server and point "
            "QUIRE_MILVUS_URI at it."
        )
    return f"The vector database at {where()} cannot be reached ({error.message}): start it, or fix the setting."


def _count(client: MilvusClient, name: str) -> int:
    return int(client.query(name, filter="", output_fields=["count(*)"])[0]["count(*)"])


def _vector_dim(description: dict[str, Any]) -> int:
    field = next(field for field in description["fields"] if field["name"] == "vector")
    return int(field["params"]["dim"])


def open_collection(model_name: str, *, store_dim: int | None = None) -> "MilvusVectors":
    """The loaded collection of `model_name`, ready to search. NoIndex when nothing is loaded into it yet;
    StoreMismatch when its vectors have other dimensions than `store_dim` (the store's: the model's). A refusal
    leaves nothing open here (another process may then load the file)."""
    client = connect()
    name = collection_name(model_name)
    try:
        count = _count(_loaded(client, name), name) if client.has_collection(name) else 0
        if not count:
            raise NoIndex(
                f"Nothing is loaded into the vector database at {where()} for {model_name} yet: "
                "run `manage.py build_index --backend milvus`."
            )
        dim = _vector_dim(client.describe_collection(name))
        if store_dim is not None and dim != store_dim:
            raise StoreMismatch(_other_dimensions(name, dim, model_name, store_dim))
        index = client.describe_index(name, "vector")
    except (MilvusException, NoIndex, StoreMismatch) as error:
        client.close()
        _let_go(settings.QUIRE_MILVUS_URI)
        if isinstance(error, MilvusException):
            raise VectorDatabaseUnavailable(f"The vector database at {where()} failed: {error.message}") from None
        raise
    index_type = str(index.get("index_type", "FLAT"))
    # The parameters as Milvus describes the index; any it leaves out, as load_store would have chosen them.
    built = {key: index.get(key, chosen) for key, chosen in index_params(index_type, count, dim).items()}
    return MilvusVectors(client, name, dim, index_type, built)


def _other_dimensions(name: str, held: int, model_name: str, dim: int) -> str:
    return (
        f"The Milvus collection {name} at {where()} holds {held}-dimensional vectors but {model_name} gives {dim}: "
        "load it again with `manage.py build_index --backend milvus --rebuild`, or point QUIRE_MILVUS_URI at "
        "another database."
    )


def _loaded(client: MilvusClient, name: str) -> MilvusClient:
    """The client, with `name` loaded into memory (a collection reopened from a Milvus Lite file, or
    released on a server, must be loaded before it is searched)."""
    client.load_collection(name)
    return client


class MilvusVectors:
    """A collection as search.backends.VectorBackend. Thread-safe: the client is (gRPC channels are)."""

    live = True  # adds and deletes from any process are in the next search
    widens = False  # Milvus reads the breadth it is given: a vector of unknown kind is read wide (engine.search)

    def __init__(self, client: MilvusClient, name: str, dim: int, index_type: str, built: dict[str, Any]) -> None:
        self.client, self.name, self._dim = client, name, dim
        self.index_type, self.built = index_type, built
        self.uri = settings.QUIRE_MILVUS_URI
        self.described = f"the Milvus collection {name} at {where()}"
        self.broken = False  # set when a call failed: the engine opens the collection again
        self.closed = False
        with _searching_lock:
            _searching[self.uri] += 1

    @property
    def dim(self) -> int:
        return self._dim

    def warm(self) -> str:
        return "nothing to warm here, the vector database holds the vectors"

    def close(self) -> None:
        with _searching_lock:
            if self.closed:
                return
            self.closed = True
            _searching[self.uri] -= 1
        self.client.close()
        _let_go(self.uri)  # the last collection closed here: another process may open a Lite file now

    def search(
        self,
        vector: np.ndarray,
        *,
        k: int = 50,
        offset: int = 0,
        taxon_ids: Iterable[int] | None = None,
        exclude_image_ids: Iterable[int] | None = None,
        wide: bool = False,
    ) -> list[Hit]:
        vector = np.ascontiguousarray(np.asarray(vector, dtype=np.float32).reshape(-1))
        if vector.shape[0] != self.dim:
            raise ValueError(f"the query vector has {vector.shape[0]} dimensions, the collection {self.dim}")
        if k <= 0 or offset < 0:
            return []
        if offset + k + MARGIN > MAX_DEPTH:
            raise SearchError(
                f"The vector database ranks at most {MAX_DEPTH - MARGIN:,} images deep (offset + k): "
                "narrow the search with a species filter, or label the images ranked before."
            )
        taxa = None if taxon_ids is None else sorted({int(taxon) for taxon in taxon_ids})
        if taxa is not None and not taxa:
            return []
        excluded = sorted({int(image_id) for image_id in exclude_image_ids or ()})
        limit = offset + k + MARGIN
        results = self._call(
            self.client.search,
            self.name,
            data=[vector.tolist()],
            limit=limit,
            filter=_expression(taxa, excluded),
            output_fields=["image_id", "taxon_id", "vector"],
            search_params=search_params(self.index_type, self.built, limit, wide),
        )
        found = list(results[0])
        if not found:
            return []
        ids = np.fromiter((hit["entity"]["image_id"] for hit in found), dtype=np.int64, count=len(found))
        taxa_of = np.fromiter((hit["entity"]["taxon_id"] for hit in found), dtype=np.int64, count=len(found))
        vectors = np.asarray([hit["entity"]["vector"] for hit in found], dtype=np.float32).astype(np.float16)
        scores = inner_products(vectors, vector)
        order = np.lexsort((ids, -scores))[offset : offset + k]
        return [Hit(int(ids[i]), float(scores[i]), int(taxa_of[i])) for i in order]

    def fetch(self, image_ids: np.ndarray) -> Fetched:
        image_ids = np.asarray(image_ids, dtype=np.int64).reshape(-1)
        rows: dict[int, dict[str, Any]] = {}
        wanted = np.unique(image_ids).tolist()
        batch = rows_per_request(self.dim)
        for start in range(0, len(wanted), batch):
            got = self._call(
                self.client.get, self.name, ids=wanted[start : start + batch], output_fields=["taxon_id", "vector"]
            )
            rows.update((int(row["image_id"]), row) for row in got)
        found = np.fromiter((int(i) in rows for i in image_ids), dtype=bool, count=len(image_ids))
        kept = [rows[int(i)] for i in image_ids[found]]
        vectors = np.asarray([row["vector"] for row in kept], dtype=np.float32).reshape(-1, self.dim)
        taxa = np.fromiter((row["taxon_id"] for row in kept), dtype=np.int64, count=len(kept))
        return Fetched(vectors.astype(np.float16), taxa, found)

    def _call(self, method: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        """`method` with QUIRE_MILVUS_TIMEOUT: a server that stops answering fails the request with a sentence,
        it does not hold a web worker's thread."""
        try:
            return method(*args, timeout=settings.QUIRE_MILVUS_TIMEOUT, **kwargs)
        except MilvusException as error:
            self.broken = True
            raise VectorDatabaseUnavailable(
                f"The vector database at {where()} failed to answer ({error.message}): check that it is running "
                "and that `manage.py build_index --backend milvus` has loaded it."
            ) from None


def _expression(taxa: list[int] | None, excluded: list[int]) -> str:
    """Milvus's boolean expression for a species filter and excluded images ("" for neither). The ids are
    ints from Quire's own code (formatted here, never a user's text), so the expression cannot be injected."""
    parts = []
    if taxa is not None:
        parts.append(f"taxon_id in [{','.join(map(str, taxa))}]")
    if excluded:
        parts.append(f"image_id not in [{','.join(map(str, excluded))}]")
    return " and ".join(parts)


# Loading the store


@dataclass(frozen=True)
class Loaded:
    added: int
    removed: int
    total: int
    index_type: str


def load_store(
    model_name: str,
    embeddings: Embeddings,
    *,
    rebuild: bool = False,
    index_type: str | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> Loaded:
    """Bring `model_name`'s collection up to date with its store: create it (with QUIRE_MILVUS_INDEX, or
    `index_type`) if needed, insert the images it lacks, delete those the store no longer has. With
    `rebuild`, drop it and load everything. `progress(done, total)` after each batch inserted.

    Resumable by construction: only images the collection lacks are inserted, so a load killed half-way
    inserts the rest when run again, and never an image twice (an insert is one request, stored whole or
    not at all). An embedding job embeds only images without a vector, so an image's vector never changes
    under the collection (as for FAISS's in-place update). StoreMismatch when the collection holds vectors
    of other dimensions."""
    index_type = (index_type or settings.QUIRE_MILVUS_INDEX).upper()
    if index_type not in INDEX_TYPES:
        raise ValueError(f"QUIRE_MILVUS_INDEX is {index_type!r}: choose one of {', '.join(INDEX_TYPES)}.")
    dim = int(embeddings.vectors.shape[1])
    client = connect()
    name = collection_name(model_name)
    try:
        if client.has_collection(name):
            held = _vector_dim(client.describe_collection(name))
            if rebuild:
                client.drop_collection(name)
            elif held != dim:
                raise StoreMismatch(_other_dimensions(name, held, model_name, dim))
        if not client.has_collection(name):
            _create(client, name, dim, index_type, len(embeddings))
        built = str(client.describe_index(name, "vector").get("index_type", index_type))
        client.load_collection(name)
        held_ids = _ids_in(client, name, embeddings.image_ids)
        missing = np.flatnonzero(~np.isin(embeddings.image_ids, held_ids))
        gone = held_ids[~np.isin(held_ids, embeddings.image_ids)]
        for start in range(0, len(gone), 16_384):  # ids only: small requests
            client.delete(name, ids=gone[start : start + 16_384].tolist())
        done, batch = 0, rows_per_request(dim)
        for start in range(0, len(missing), batch):
            rows = missing[start : start + batch]
            vectors = np.asarray(embeddings.vectors[rows], dtype=np.float32)
            client.insert(
                name,
                [
                    {"image_id": int(image_id), "taxon_id": int(taxon_id), "vector": vector}
                    for image_id, taxon_id, vector in zip(
                        embeddings.image_ids[rows], embeddings.taxon_ids[rows], vectors, strict=True
                    )
                ],
            )
            done += len(rows)
            if progress:
                progress(done, len(missing))
        client.flush(name)
        total = _count(client, name)
    except MilvusException as error:
        raise VectorDatabaseUnavailable(f"The vector database at {where()} failed: {error.message}") from None
    finally:
        client.close()
        _let_go(settings.QUIRE_MILVUS_URI)
    return Loaded(len(missing), len(gone), total, built)


def _create(client: MilvusClient, name: str, dim: int, index_type: str, count: int) -> None:
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("image_id", DataType.INT64, is_primary=True)
    schema.add_field("taxon_id", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    index = client.prepare_index_params()
    index.add_index(
        field_name="vector", index_type=index_type, metric_type="IP", params=index_params(index_type, count, dim)
    )
    client.create_collection(name, schema=schema, index_params=index)


def _ids_in(client: MilvusClient, name: str, expected: np.ndarray, window: int = 500_000) -> np.ndarray:
    """Every image id in the collection, read in ranges of ids that each hold about `window` of the
    `expected` ids (4 MB an answer), and the range below them. (pymilvus's query_iterator does the same,
    but asks Milvus Lite for a timestamp it does not serve, and logs a traceback each time.)"""
    bounds = np.unique(expected)[::window].tolist()
    if not bounds:
        ranges = ["image_id >= -9223372036854775808"]  # every id
    else:
        highs: list[int | None] = [*bounds[1:], None]
        ranges = [f"image_id < {bounds[0]}"] + [
            f"image_id >= {low}" + ("" if high is None else f" and image_id < {high}")
            for low, high in zip(bounds, highs, strict=True)
        ]
    found = [
        np.fromiter((row["image_id"] for row in client.query(name, filter=where, output_fields=["image_id"])), np.int64)
        for where in ranges
    ]
    return np.concatenate(found)


def held_ids(model_name: str) -> np.ndarray:
    """The image ids in `model_name`'s collection (for checks and tests); empty when there is none."""
    client = connect()
    try:
        name = collection_name(model_name)
        if not client.has_collection(name):
            return np.empty(0, dtype=np.int64)
        _loaded(client, name)
        return _ids_in(client, name, np.empty(0, dtype=np.int64))
    finally:
        client.close()
        _let_go(settings.QUIRE_MILVUS_URI)
