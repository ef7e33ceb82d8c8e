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
stopped, without duplicates, and an embedding job's new images are added the same way. It then waits while the
server indexes what it inserted, and says how much is indexed.

Consistency (Milvus's levels, milvus.io/docs/consistency.md): a load reads at Strong, which waits for every write
made before the request. A server's collections default to Bounded, under which a count straight after an insert
said 0, so a resumed load inserted every image again (Milvus keeps duplicate primary keys). Searches read at Bounded:
Strong made each one wait for the server's next time tick (p50 200 ms, 400 ms with the vectors, against 5 to 10 ms at
Bounded on a 100k collection), so instead a load returns only once a Bounded read sees all it wrote, and what
build_index reports is in the next search of every process. On Milvus Lite, one process, every level reads its writes.
"""

import hashlib
import math
import re
import threading
import time
import warnings
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.conf import settings
from pymilvus import DataType, MilvusClient
from pymilvus.exceptions import MilvusException
from pymilvus.grpc_gen import common_pb2

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
STRONG, BOUNDED = "Strong", "Bounded"
# Candidates asked for beyond the page: rows whose scores tie at the cut are then all seen and ordered by id.
MARGIN = 16
# Vectors a request carries (an insert, a fetch): half a megabyte, 128 at 1,024 dimensions. Milvus Lite's time per
# request grows much faster than its size: 1,024-d rows inserted 12,300 a second in requests of 125, 2,800 in
# requests of 1,000 and 360 in requests of 2,000; fetching 1,000 took 46 ms in requests of 125 and 607 ms in one.
REQUEST_BYTES = 512 * 1024


def rows_per_request(dim: int) -> int:
    return max(1, REQUEST_BYTES // (4 * dim))


# The index `manage.py build_index --backend milvus` creates (QUIRE_MILVUS_INDEX: index_params), and what a search
# reads of it (search_params). Narrow is for an image's own vector, wide for texts and fitted vectors, off the images'
# distribution. Parameter names as Milvus documents them (milvus.io/docs/index.md). The breadths were measured on a
# Milvus 2.3 standalone server on the realistic worlds (bench/milvus_bench.py, bench/RESULTS.md, issue 43): each
# reached recall@50 >= 0.95 for image and text queries at 100k (every type) and 1M (IVF_SQ8, HNSW). Milvus Lite
# builds IVF_FLAT but answers every nprobe alike (recall@50 0.72 at 1M): on Lite, FLAT is the index to use.
INDEX_TYPES = ("FLAT", "IVF_FLAT", "IVF_SQ8", "IVF_PQ", "HNSW", "DISKANN", "GPU_CAGRA", "AUTOINDEX")
# Fewer rows than this per list and knowhere trains fewer lists than asked (it clamps nlist to rows / 39, the
# k-means minimum of 39 points a centroid): a segment of 32k 1,024-d rows gets 820 lists whatever nlist says.
ROWS_PER_LIST = 39
# IVF_PQ's codes keep one byte for each 8 dimensions, too coarse to rank by (recall@50 0.67 for texts when only the
# page was re-scored): Quire asks for this many candidates and ranks them exactly from their stored vectors, as the
# FAISS path re-scores its codes' candidates (search/index.py). (narrow, wide)
RESCORED_CANDIDATES = {"IVF_PQ": (1000, 2500)}


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


LISTS_MAX_AGE = 60.0  # seconds
# IVF breadths, in lists of a segment. Not shares of them: a server searches each segment's own index, and a sealed
# segment is at most a few hundred megabytes whatever the collection's size (dataCoord.segment.maxSize), so its lists
# are bounded (about 4,000 at 1,024-d: 156k rows / 39) and the lists a search must read are too. Measured on the
# realistic worlds (bench/RESULTS.md, issue 43): nprobe 128 gave images 0.986 to 0.999 and 256 gave texts 0.990 to
# 0.998 at 100k and 1M, where the first rule (a tenth and a quarter of the lists) read 400 and 1,000 at 1M for the
# same recall in three to four times the time.
IVF_NARROW, IVF_WIDE = 128, 256


def lists_read(built: dict[str, Any], segment_rows: int | None) -> int:
    """The lists an IVF index has in its largest segment: Milvus indexes each segment on its own, and knowhere
    clamps `nlist` to the segment's rows / 39 (describe_index still reports the nlist asked for). A breadth is
    capped at these (a 6,000-row segment has 153 lists whatever nlist says). `segment_rows` is None where the server
    does not say (Milvus Lite)."""
    lists = int(built.get("nlist", 1))
    if segment_rows:
        lists = min(lists, max(1, segment_rows // ROWS_PER_LIST))
    return lists


def search_params(index_type: str, built: dict[str, Any], limit: int, wide: bool) -> dict[str, Any]:
    """What a search of `limit` results reads of an index built with `built` (with "lists" from lists_read)."""
    params: dict[str, Any] = {}
    if index_type.startswith("IVF"):
        lists = int(built.get("lists", built.get("nlist", 1)))
        params["nprobe"] = min(lists, IVF_WIDE if wide else IVF_NARROW)
    elif index_type in ("HNSW", "AUTOINDEX"):  # a 2.3 server's AUTOINDEX is HNSW (its autoIndex.params) and takes ef
        params["ef"] = max(limit, 512 if wide else 256)
    elif index_type == "DISKANN":
        params["search_list"] = max(limit, 1000 if wide else 200)
    elif index_type == "GPU_CAGRA":
        params["itopk_size"] = max(limit, 512 if wide else 128)
    return {"metric_type": "IP", "params": params}


def candidates(index_type: str, limit: int, wide: bool) -> int:
    """How many results to ask Milvus for, to return the best `limit` after re-scoring them exactly."""
    narrow_count, wide_count = RESCORED_CANDIDATES.get(index_type, (0, 0))
    return min(MAX_DEPTH, max(limit, wide_count if wide else narrow_count))


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


# Milvus Lite's server is started by this process when it opens the file (pymilvus waits for its socket within the
# connect timeout): on a loaded machine that start took over 10 s, and the file "could not be reached". A Lite file is
# never a remote server that may be down, so its first connection waits up to this long.
LITE_START_SECONDS = 60.0


def _client(timeout: float, *, lite_start: bool = True) -> MilvusClient:
    uri = settings.QUIRE_MILVUS_URI
    taken = lite_file.hold(uri, where())  # a Lite file: this process's alone, and Milvus Lite's
    if lite_start and lite_file.is_lite(uri):  # the health check keeps its own, short, limit
        timeout = max(timeout, LITE_START_SECONDS)
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
        client = _client(timeout, lite_start=False)
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


def _count(client: MilvusClient, name: str, level: str = STRONG) -> int:
    return int(client.query(name, filter="", output_fields=["count(*)"], consistency_level=level)[0]["count(*)"])


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
        index, count, dim = _loaded_index(client, name, model_name, store_dim)
        segment_rows = _largest_segment(client, settings.QUIRE_MILVUS_URI, name)
    except (MilvusException, NoIndex, StoreMismatch) as error:
        client.close()
        _let_go(settings.QUIRE_MILVUS_URI)
        if isinstance(error, MilvusException):
            raise VectorDatabaseUnavailable(f"The vector database at {where()} failed: {error.message}") from None
        raise
    index_type = str(index.get("index_type", "FLAT"))
    # The parameters as Milvus describes the index; any it leaves out, as load_store would have chosen them.
    built = {key: index.get(key, chosen) for key, chosen in index_params(index_type, count, dim).items()}
    if "nlist" in built:
        built["lists"] = lists_read(built, segment_rows)
    return MilvusVectors(client, name, dim, index_type, built)


def _loaded_index(
    client: MilvusClient, name: str, model_name: str, store_dim: int | None
) -> tuple[dict[str, Any], int, int]:
    """The collection's index, its loaded rows and its vectors' dimension; NoIndex or StoreMismatch saying why it
    cannot be searched."""
    index = _index_of(client, name) if client.has_collection(name) else None
    if index is None and client.has_collection(name):  # a server loads no collection without an index
        raise NoIndex(
            f"The Milvus collection {name} at {where()} has no index (a load stopped before it made one, or "
            "another program made the collection): run `manage.py build_index --backend milvus`."
        )
    count = _count(_loaded(client, name), name) if index is not None else 0
    if index is None or not count:
        raise NoIndex(
            f"Nothing is loaded into the vector database at {where()} for {model_name} yet: "
            "run `manage.py build_index --backend milvus`."
        )
    dim = _vector_dim(client.describe_collection(name))
    if store_dim is not None and dim != store_dim:
        raise StoreMismatch(_other_dimensions(name, dim, model_name, store_dim))
    return index, count, dim


def _refuse_too_deep(offset: int, k: int) -> None:
    if offset + k + MARGIN > MAX_DEPTH:
        raise SearchError(
            f"The vector database ranks at most {MAX_DEPTH - MARGIN:,} images deep (offset + k): "
            "narrow the search with a species filter, or label the images ranked before."
        )


def _rescored(found: list[Any], vector: np.ndarray, offset: int, k: int) -> list[Hit]:
    """The server's candidates re-scored exactly from their returned vectors (fp16, as the FAISS path keeps them),
    ties by id, from `offset` on."""
    if not found:
        return []
    ids = np.fromiter((hit["entity"]["image_id"] for hit in found), dtype=np.int64, count=len(found))
    taxa_of = np.fromiter((hit["entity"]["taxon_id"] for hit in found), dtype=np.int64, count=len(found))
    vectors = np.asarray([hit["entity"]["vector"] for hit in found], dtype=np.float32).astype(np.float16)
    scores = inner_products(vectors, vector)
    order = np.lexsort((ids, -scores))[offset : offset + k]
    return [Hit(int(ids[i]), float(scores[i]), int(taxa_of[i])) for i in order]


def _index_of(client: MilvusClient, name: str) -> dict[str, Any] | None:
    """The vector field's index as Milvus describes it (with its build progress), or None when it has none."""
    if "vector" not in client.list_indexes(name, field_name="vector"):
        return None
    described: dict[str, Any] | None = client.describe_index(name, "vector")
    return described


def _sealed_segment_rows(
    client: MilvusClient, uri: str, name: str, *, loaded: bool, with_index: bool = False
) -> list[int] | None:
    """The rows of each sealed segment of the collection, as its data coordinator stores them or (`loaded`) as its
    query nodes serve them (`with_index`: only those they serve with its index loaded); None on Milvus Lite, which has
    neither call (it answers UNIMPLEMENTED, and pymilvus logs a traceback for it), or where a server does not say."""
    if lite_file.is_lite(uri):
        return None
    try:
        segments = client.list_loaded_segments(name) if loaded else client.list_persistent_segments(name)
    except Exception:  # grpc's own error class for UNIMPLEMENTED, and pymilvus's: the answer is "unknown"
        return None
    done = {common_pb2.SegmentState.Sealed, common_pb2.SegmentState.Flushed}  # no longer growing: indexed
    return [
        int(segment.num_rows)
        for segment in segments
        if segment.state in done and (not with_index or bool(getattr(segment, "index_id", None)))
    ]


def _largest_segment(client: MilvusClient, uri: str, name: str) -> int | None:
    """The rows of the collection's largest sealed segment (the ones a server indexes); None where unknown."""
    rows = _sealed_segment_rows(client, uri, name, loaded=False)
    return max(rows, default=None) if rows is not None else None


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
        self._lists_read_at = time.monotonic()
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
        _refuse_too_deep(offset, k)
        taxa = None if taxon_ids is None else sorted({int(taxon) for taxon in taxon_ids})
        if taxa is not None and not taxa:
            return []
        excluded = sorted({int(image_id) for image_id in exclude_image_ids or ()})
        limit = offset + k + MARGIN
        asked = candidates(self.index_type, limit, wide)
        self._count_lists_again()
        results = self._call(
            self.client.search,
            self.name,
            data=[vector.tolist()],
            limit=asked,
            filter=_expression(taxa, excluded),
            output_fields=["image_id", "taxon_id", "vector"],
            search_params=search_params(self.index_type, self.built, asked, wide),
            consistency_level=BOUNDED,
        )
        return _rescored(list(results[0]), vector, offset, k)

    def _count_lists_again(self) -> None:
        """Segments grow as loads add rows and the server compacts them (two 32k-row segments become one of 65k,
        with more lists): the lists that cap a breadth are counted again every LISTS_MAX_AGE seconds."""
        if "lists" not in self.built or time.monotonic() - self._lists_read_at < LISTS_MAX_AGE:
            return
        self._lists_read_at = time.monotonic()
        segment_rows = _largest_segment(self.client, self.uri, self.name)
        self.built = {**self.built, "lists": lists_read(self.built, segment_rows)}

    def fetch(self, image_ids: np.ndarray) -> Fetched:
        image_ids = np.asarray(image_ids, dtype=np.int64).reshape(-1)
        rows: dict[int, dict[str, Any]] = {}
        wanted = np.unique(image_ids).tolist()
        batch = rows_per_request(self.dim)
        for start in range(0, len(wanted), batch):
            got = self._call(
                self.client.get,
                self.name,
                ids=wanted[start : start + batch],
                output_fields=["taxon_id", "vector"],
                consistency_level=BOUNDED,
            )
            rows.update((int(row["image_id"]), row) for row in got)
        found = np.fromiter((int(i) in rows for i in image_ids), dtype=bool, count=len(image_ids))
        kept = [rows[int(i)] for i in image_ids[found]]
        vectors = np.asarray([row["vector"] for row in kept], dtype=np.float32).reshape(-1, self.dim)
        taxa = np.fromiter((row["taxon_id"] for row in kept), dtype=np.int64, count=len(kept))
        return Fetched(vectors.astype(np.float16), taxa, found)

    def sample(self, n: int) -> np.ndarray:
        # The first n rows the server returns, not a random draw (Milvus has none): the look-alike rule reads
        # typical neighbours only, which any large enough slice of the collection shows.
        rows = self._call(self.client.query, self.name, filter="", output_fields=["vector"], limit=n,
                          consistency_level=BOUNDED)  # fmt: skip
        return np.asarray([row["vector"] for row in rows], dtype=np.float32).reshape(-1, self.dim)

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
    indexed: int  # rows the server has indexed; the rest are searched exhaustively until it has (a server's
    # sealed segments are indexed in the background: minutes for 100k 1,024-d rows on two cores)

    @property
    def ready(self) -> bool:
        return self.indexed >= self.total


class IndexRefused(SearchError):
    """The Milvus server cannot build the index type asked for; nothing was created or dropped."""


# How long load_store waits for the server to index what it inserted, at most (then it says how far it got: Milvus
# goes on indexing, and searches read the rows not indexed yet exhaustively).
INDEX_WAIT = 3600.0
Progress = Callable[[int, int], None]


def _ready_collection(
    client: MilvusClient, name: str, model_name: str, embeddings: Embeddings, index_type: str, *, rebuild: bool
) -> None:
    """The collection there, with its index: dropped first for a `rebuild` (once the server showed it can build
    `index_type`), made where missing; StoreMismatch where it holds vectors of other dimensions."""
    dim = int(embeddings.vectors.shape[1])
    if client.has_collection(name):
        held = _vector_dim(client.describe_collection(name))
        if rebuild:
            _try_index(client, f"{name}_check", dim, index_type, len(embeddings))  # refused before the drop
            client.drop_collection(name)
        elif held != dim:
            raise StoreMismatch(_other_dimensions(name, held, model_name, dim))
    if not client.has_collection(name):
        _create(client, name, dim, index_type, len(embeddings))
    elif _index_of(client, name) is None:  # a load stopped between making the collection and its index
        _add_index(client, name, dim, index_type, len(embeddings))


def _insert(
    client: MilvusClient, name: str, embeddings: Embeddings, missing: np.ndarray, progress: Progress | None
) -> None:
    """The store's rows `missing` inserted, a request's worth at a time (each stored whole or not at all)."""
    done, batch = 0, rows_per_request(int(embeddings.vectors.shape[1]))
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


def load_store(
    model_name: str,
    embeddings: Embeddings,
    *,
    rebuild: bool = False,
    index_type: str | None = None,
    progress: Progress | None = None,
    indexing: Progress | None = None,
    index_wait: float = INDEX_WAIT,
) -> Loaded:
    """Bring `model_name`'s collection up to date with its store: create it (with QUIRE_MILVUS_INDEX, or
    `index_type`) if needed, insert the images it lacks, delete those the store no longer has, then wait (up to
    `index_wait` seconds) while the server indexes them. With `rebuild`, drop it and load everything.
    `progress(done, total)` after each batch inserted; `indexing(indexed, total)` while the server indexes.

    Resumable by construction: only images the collection lacks are inserted, so a load killed half-way
    inserts the rest when run again, and never an image twice (an insert is one request, stored whole or
    not at all, and the ids are read at Strong consistency). An embedding job embeds only images without a vector,
    so an image's vector never changes under the collection (as for FAISS's in-place update). StoreMismatch when the
    collection holds vectors of other dimensions; IndexRefused, before anything is dropped or made, when the server
    cannot build `index_type`."""
    index_type = (index_type or settings.QUIRE_MILVUS_INDEX).upper()
    if index_type not in INDEX_TYPES:
        raise ValueError(f"QUIRE_MILVUS_INDEX is {index_type!r}: choose one of {', '.join(INDEX_TYPES)}.")
    client = connect()
    name = collection_name(model_name)
    try:
        _refuse_what_the_server_lacks(client, index_type)
        _ready_collection(client, name, model_name, embeddings, index_type, rebuild=rebuild)
        built = str(client.describe_index(name, "vector").get("index_type", index_type))
        client.load_collection(name)
        held_ids = _ids_in(client, name, embeddings.image_ids)
        missing = np.flatnonzero(~np.isin(embeddings.image_ids, held_ids))
        gone = held_ids[~np.isin(held_ids, embeddings.image_ids)]
        for start in range(0, len(gone), 16_384):  # ids only: small requests
            client.delete(name, ids=gone[start : start + 16_384].tolist())
        _insert(client, name, embeddings, missing, progress)
        client.flush(name)
        total = _count(client, name)
        _wait_until_searches_see(client, name, total)
        indexed = _wait_until_indexed(client, name, total, indexing, index_wait, flat=built.upper() == "FLAT")
    except MilvusException as error:
        raise VectorDatabaseUnavailable(f"The vector database at {where()} failed: {error.message}") from None
    finally:
        client.close()
        _let_go(settings.QUIRE_MILVUS_URI)
    return Loaded(len(missing), len(gone), total, built, indexed)


def _refuse_what_the_server_lacks(client: MilvusClient, index_type: str) -> None:
    """The embedded builds (PyPI's `milvus` package, version "...-lite") accept a DISKANN index and never build it
    (their knowhere fails each try with bad_function_call, and describe_index says "Finished" with every row
    pending): refused here, before anything is made."""
    if index_type != "DISKANN" or lite_file.is_lite(settings.QUIRE_MILVUS_URI):
        return
    version = str(client.get_server_version())
    if version.endswith("-lite"):
        raise IndexRefused(
            f"The Milvus server at {where()} ({version}, an embedded build) cannot build DISKANN: choose HNSW or "
            "IVF_SQ8 in QUIRE_MILVUS_INDEX, or run Milvus's own image (docker/compose.milvus.yml). Nothing was changed."
        )


def _create(client: MilvusClient, name: str, dim: int, index_type: str, count: int) -> None:
    """The collection with its index, or nothing: a server makes the collection and then its index in two
    requests, and an index it refuses would leave a collection no search can read."""
    schema = client.create_schema(auto_id=False, enable_dynamic_field=False)
    schema.add_field("image_id", DataType.INT64, is_primary=True)
    schema.add_field("taxon_id", DataType.INT64)
    schema.add_field("vector", DataType.FLOAT_VECTOR, dim=dim)
    client.create_collection(name, schema=schema, consistency_level=BOUNDED)  # each read names its level anyway
    try:
        _add_index(client, name, dim, index_type, count)
    except IndexRefused:
        client.drop_collection(name)
        raise


def _add_index(client: MilvusClient, name: str, dim: int, index_type: str, count: int) -> None:
    index = client.prepare_index_params()
    index.add_index(
        field_name="vector", index_type=index_type, metric_type="IP", params=index_params(index_type, count, dim)
    )
    try:
        client.create_index(name, index)
    except MilvusException as error:
        raise IndexRefused(
            f"The vector database at {where()} refuses a {index_type} index ({error.message}): choose another "
            f"QUIRE_MILVUS_INDEX ({', '.join(INDEX_TYPES)}; which a server offers depends on its build). "
            "Nothing was changed."
        ) from None


def _try_index(client: MilvusClient, name: str, dim: int, index_type: str, count: int) -> None:
    """Make and drop an empty collection with this index: IndexRefused if the server would refuse it."""
    if client.has_collection(name):
        client.drop_collection(name)
    _create(client, name, dim, index_type, count)
    client.drop_collection(name)


def _wait_until_searches_see(client: MilvusClient, name: str, total: int, wait: float = 60.0) -> None:
    """Return once a search's consistency level (Bounded) counts the `total` rows a Strong read counted: a server
    serves Bounded reads from a snapshot up to its gracefulTime (5 s) old."""
    deadline = time.monotonic() + wait
    while _count(client, name, BOUNDED) != total and time.monotonic() < deadline:
        time.sleep(0.25)


def _wait_until_indexed(
    client: MilvusClient,
    name: str,
    total: int,
    indexing: Progress | None,
    wait: float,
    poll: float = 1.0,
    *,
    flat: bool = False,
) -> int:
    """Rows indexed and served from their index, once that is every row or after `wait` seconds. A server seals and
    indexes segments in the background (describe_index's pending_index_rows), then hands them to its query nodes;
    Milvus Lite indexes as it loads."""
    deadline = time.monotonic() + wait
    while True:
        described = client.describe_index(name, "vector")
        if str(described.get("state", "")).lower() == "failed":
            raise IndexRefused(
                f"The vector database at {where()} failed to build the {described.get('index_type')} index: "
                f"{described.get('index_state_fail_reason') or 'no reason given'}. Choose another QUIRE_MILVUS_INDEX "
                "and load again with --rebuild."
            )
        pending = int(described.get("pending_index_rows", 0) or 0)
        indexed = total if not pending else min(total, int(described.get("indexed_rows", 0) or 0))
        if not pending:  # indexed: now wait until searches read the index, not the rows as they were inserted
            indexed = min(indexed, _rows_served_sealed(client, name, total, flat=flat))
        if indexing:
            indexing(indexed, total)
        if indexed >= total or time.monotonic() >= deadline:
            return indexed
        time.sleep(poll)


def _rows_served_sealed(client: MilvusClient, name: str, total: int, *, flat: bool = False) -> int:
    """Rows the query nodes serve from sealed segments with their index loaded: before the hand-off a server searches
    rows as they were inserted, or a sealed segment through an interim index (Milvus 2.3's, IVF at a small nprobe:
    under load, the 0.907 recall an AUTOINDEX test read once), so a recall measured then is not the index's. A FLAT
    collection has no index to load (its segments name none): sealed is served. `total` where the server does not say
    (Milvus Lite)."""
    rows = _sealed_segment_rows(client, settings.QUIRE_MILVUS_URI, name, loaded=True, with_index=not flat)
    return total if rows is None else sum(rows)


def _ids_in(client: MilvusClient, name: str, expected: np.ndarray, window: int = 500_000) -> np.ndarray:
    """Every image id in the collection, read in ranges of ids that each hold about `window` of the
    `expected` ids (4 MB an answer), and the range below them. (pymilvus's query_iterator does the same,
    but asks Milvus Lite for a timestamp it does not serve, and logs a traceback each time.) No literal is
    negative: a server's expression parser refuses int64's least value, -9223372036854775808, reading the
    digits before the sign (Milvus Lite's accepts it)."""
    bounds = np.unique(expected)[::window].tolist()
    if not bounds:
        ranges = ["image_id < 0", "image_id >= 0"]  # every id
    else:
        highs: list[int | None] = [*bounds[1:], None]
        ranges = [f"image_id < {bounds[0]}"] + [
            f"image_id >= {low}" + ("" if high is None else f" and image_id < {high}")
            for low, high in zip(bounds, highs, strict=True)
        ]
    found = [
        np.fromiter(
            (
                row["image_id"]
                for row in client.query(name, filter=where, output_fields=["image_id"], consistency_level=STRONG)
            ),
            np.int64,
        )
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
