"""Where the collection's vectors are searched: the one interface the engine ranks through.

QUIRE_VECTOR_BACKEND picks one:
  faiss   an index and the float16 store in each process (search/index.py, search/store.py): the
          default, exact or approximate, rebuilt or updated by `manage.py build_index`.
  milvus  a Milvus collection (search/milvus.py): a Milvus Lite file for one process, or a server that many
          web workers and machines share. `manage.py build_index --backend milvus` loads the store into it.

Both answer the same three questions, with the same contract (the engine and its tests hold them to it):
rank the collection by inner product with a vector (paged, ties broken by image id, a species filter
ranked exactly, excluded images left out), fetch given images' vectors, and say their dimension.
Labels, their history and every export stay in PostgreSQL whichever backend serves the vectors.
"""

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from .index import Searcher
from .results import Hit
from .store import warm


@dataclass(frozen=True)
class Fetched:
    """Vectors of some images: row i of `vectors` and `taxon_ids` belongs to the i-th image asked for that
    `found` marks; images without a vector are left out. The vectors are float16, the store's numbers, so
    that every backend scores them alike (search.index.inner_products)."""

    vectors: np.ndarray
    taxon_ids: np.ndarray
    found: np.ndarray  # bool, one per image asked for


class VectorBackend(Protocol):
    # True where rows change under a running process (images added or deleted elsewhere are searched at
    # once): nothing is remembered between searches. False where the process holds a loaded snapshot.
    live: bool
    described: str  # what holds the vectors, for messages: "the search index", "the Milvus collection ... at ..."
    broken: bool  # a call failed: the engine opens the backend again before the next search
    # True where a search widens itself as its results require (FAISS: search/index.py), so `wide` only saves a
    # first reading; False where it reads the breadth it is given, so a vector of unknown kind is read wide.
    widens: bool

    @property
    def dim(self) -> int: ...

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
        """Hits offset .. offset+k-1 of the collection ranked by inner product with the unit `vector`, best
        first, ties by image id. `taxon_ids` keeps those taxa's images only (ranked exactly); `wide`: the
        vector is not an image's (an approximate index reads more for it)."""
        ...

    def fetch(self, image_ids: np.ndarray) -> Fetched:
        """The vectors and taxa of `image_ids` (int64), in their order, of those that have one."""
        ...

    def sample(self, n: int) -> np.ndarray:
        """Up to `n` of the collection's vectors (float32 rows), for statistics of the whole
        (search/lookalikes.py): a random sample where the backend can draw one."""
        ...

    def close(self) -> None:
        """Let go of what it holds (a connection); the engine calls it when it forgets the backend."""
        ...

    def warm(self) -> str:
        """Read what this machine holds of the vectors into the page cache; returns what it did, for the log."""
        ...


class FaissVectors:
    """The FAISS backend: a loaded index and the store it was built from (search.index.Searcher)."""

    live = False
    described = "the search index"
    broken = False  # a loaded index does not fail; a new one is loaded when current.json moves
    widens = True

    def __init__(self, searcher: Searcher) -> None:
        self.searcher = searcher

    @property
    def dim(self) -> int:
        return self.searcher.dim

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
        return self.searcher.search(
            vector, k=k, offset=offset, taxon_ids=taxon_ids, exclude_image_ids=exclude_image_ids, wide=wide
        )

    def fetch(self, image_ids: np.ndarray) -> Fetched:
        rows, found = self.searcher.locate(np.asarray(image_ids, dtype=np.int64))
        rows = rows[found]
        embeddings = self.searcher.embeddings
        return Fetched(np.asarray(embeddings.vectors[rows]), embeddings.taxon_ids[rows], found)

    def sample(self, n: int) -> np.ndarray:
        vectors = self.searcher.embeddings.vectors
        rows = np.random.default_rng(0).choice(len(vectors), size=min(n, len(vectors)), replace=False)
        return np.asarray(vectors[np.sort(rows)], dtype=np.float32)

    def close(self) -> None:
        pass  # the memory maps go with the last reference

    def warm(self) -> str:
        return warm(self.searcher.embeddings.vectors)[1]  # search.store.warm: after a restart, read it in once
