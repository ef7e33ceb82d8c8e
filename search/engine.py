"""Searching and scoring over the loaded index and store. Callers outside search/ use search.facade.

It knows vectors, image ids and taxon ids, not labels or HTTP: callers turn
taxon names into ids and a query's labels into ids to exclude.

It ranks through a vector backend (search/backends.py, chosen by QUIRE_VECTOR_BACKEND). FAISS's index and
store are loaded once per process and swapped when a rebuild moves `current.json` (checked with one stat
per search); a Milvus collection is opened once per process and searched live.
"""

import logging
import os
import threading
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt
from django.conf import settings

from . import batches, lookalikes, strategies
from . import index as faiss_index
from .backends import FaissVectors, VectorBackend
from .device import search_device
from .exceptions import NoIndex, SearchError, SearchUnavailable
from .index import Searcher, inner_products
from .request import RankingRequest
from .results import Hit
from .spec import ClipSpec, configured_spec, index_folder, store_root, where_configured
from .store import EmbeddingStore
from .text_orders import TextOrders

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

    from .clip import ClipEmbedder


def _embedder(spec: ClipSpec) -> "ClipEmbedder":
    from .clip import get_embedder  # torch and open_clip: only when a text or image must be encoded

    return get_embedder(spec)


@dataclass
class _Loaded:
    pointer_stamp: tuple[int, ...]
    backend: VectorBackend
    # Text orders remembered between searches, forgotten with the index they ranked; None for a live
    # backend, whose rows change under it (an image added elsewhere must be in the next ranking).
    text_orders: TextOrders | None = field(init=False)
    # When two of its images are look-alikes (search/lookalikes.py), read from a sample once per index loaded.
    _lookalikes: lookalikes.LookAlikeRule | None = field(init=False, default=None)

    def __post_init__(self) -> None:
        self.text_orders = None if self.backend.live else TextOrders()

    @property
    def lookalikes(self) -> lookalikes.LookAlikeRule:
        if self._lookalikes is None:
            self._lookalikes = lookalikes.calibrate(self.backend.sample(lookalikes.SAMPLE))
        return self._lookalikes


logger = logging.getLogger(__name__)
_loaded: dict[str, _Loaded] = {}
_lock = threading.Lock()


def _get(model_name: str) -> _Loaded:
    if settings.QUIRE_VECTOR_BACKEND == "milvus":
        return _get_milvus(model_name)
    pointer = index_folder(model_name) / "current.json"
    try:
        stat = os.stat(pointer)
    except FileNotFoundError:
        source = where_configured(model_name)
        raise NoIndex(
            f"No search index has been built for {model_name} yet{f' ({source})' if source else ''}: "
            "run `manage.py build_index`."
        ) from None
    stamp = (stat.st_mtime_ns, stat.st_ino, stat.st_size)
    with _lock:
        loaded = _loaded.get(model_name)
        if loaded is None or loaded.pointer_stamp != stamp:
            index, info = faiss_index.load(index_folder(model_name))
            try:
                embeddings = EmbeddingStore.existing(store_root(), model_name).load()
            except FileNotFoundError as error:
                raise NoIndex(str(error)) from None
            searcher = Searcher(embeddings, index, labels=info["labels"])
            loaded = _Loaded(stamp, _faiss_backend(searcher))
            _loaded[model_name] = loaded
        return loaded


def _faiss_backend(searcher: Searcher) -> VectorBackend:
    """The loaded index, its rankings on the GPU where this process searches on one (search/device.py) and the
    vectors fit it; otherwise on the CPU, as everywhere else."""
    if search_device() == "cuda":
        from .card import on_card  # torch: only where a GPU searches

        if (card := on_card(searcher)) is not None:
            return card
    return FaissVectors(searcher)


def _get_milvus(model_name: str) -> _Loaded:
    """The Milvus collection of `model_name` at QUIRE_MILVUS_URI, opened once per process (and again after
    a failure, so a server that comes back, or a collection loaded since, is found)."""
    from . import milvus  # pymilvus: only where Milvus is configured

    key = f"milvus:{settings.QUIRE_MILVUS_URI}:{model_name}"
    with _lock:
        loaded = _loaded.get(key)
        if loaded is not None and loaded.backend.broken:
            loaded.backend.close()
            loaded = None
        if loaded is None:
            try:  # the store's dimension is the model's, where this machine has the store
                store_dim: int | None = EmbeddingStore.existing(store_root(), model_name).dim
            except FileNotFoundError:
                store_dim = None
            loaded = _Loaded((), milvus.open_collection(model_name, store_dim=store_dim))
            _loaded[key] = loaded
        return loaded


def forget(model_name: str | None = None) -> None:
    """Drop what this process has loaded (of `model_name`, or everything), closing Milvus connections: the
    next search loads afresh. For a backend that failed, and for tests."""
    with _lock:
        for key in [key for key in _loaded if model_name is None or key.endswith(model_name)]:
            _loaded.pop(key).backend.close()


def warm_store(spec: ClipSpec) -> str:
    """Read what `spec`'s backend holds on this machine into the page cache (VectorBackend.warm); returns
    what it did."""
    started = time.perf_counter()
    try:
        backend = _get(spec.name).backend
    except SearchUnavailable as error:  # a background thread: the index went (a rebuild, a test's data) since
        logger.info("store not warmed: %s", error)
        return f"{spec.name}: store not warmed: {error}"
    message = f"{spec.name}: {backend.warm()} ({time.perf_counter() - started:.1f} s)"
    logger.info(message)
    return message


def vector_of_image(loaded: _Loaded, image_id: int) -> np.ndarray:
    # An id past int64 cannot be an image's (and would overflow numpy's conversion, not say so).
    in_range = 0 <= image_id <= np.iinfo(np.int64).max
    fetched = loaded.backend.fetch(np.array([image_id if in_range else -1], dtype=np.int64))
    if not fetched.found[0]:
        raise SearchError(f"Image {image_id} has no embedding (it is not in the collection, or not embedded yet).")
    vector: np.ndarray = fetched.vectors[0].astype(np.float32)
    return vector


def search(
    *,
    text: str | None = None,
    image_id: int | None = None,
    image: "PILImage | None" = None,
    vector: npt.ArrayLike | None = None,
    k: int = 50,
    offset: int = 0,
    taxon_ids: Iterable[int] | None = None,
    exclude_image_ids: Iterable[int] | None = None,
    spec: ClipSpec | None = None,
) -> list[Hit]:
    """Rank the collection by similarity to exactly one of: a text, an image of the
    collection (`image_id`), an uploaded PIL `image`, or a `vector`.

    `taxon_ids` (species ids; callers expand genus, family... to species) restricts
    the ranking to those images and ranks them all exactly. Returns hits
    offset .. offset+k-1, best first, ties broken by image id.
    """
    _check_search(text=text, image_id=image_id, image=image, vector=vector, k=k, offset=offset)
    spec = spec or configured_spec()
    loaded = _get(spec.name)
    query = _query_vector(loaded, spec, text=text, image_id=image_id, image=image, vector=vector)
    taxa = None if taxon_ids is None else list(taxon_ids)
    # A typed text is off the images' distribution: its search starts wide. A given vector may be anything: a
    # backend that widens itself as its results require (FAISS, search/index.py) starts it narrow, one that
    # reads only the breadth it is given (Milvus) reads it wide. An image's own vector is read narrow.
    wide = text is not None or (vector is not None and not loaded.backend.widens)

    def ranked(k: int, offset: int) -> list[Hit]:
        return loaded.backend.search(
            query, k=k, offset=offset, taxon_ids=taxa, exclude_image_ids=exclude_image_ids, wide=wide
        )

    # The grid's pages of a text: remembered (text_orders.py).
    if text is not None and not exclude_image_ids and loaded.text_orders is not None:
        key = ("page", query.tobytes(), None if taxa is None else tuple(sorted(taxa)))
        return loaded.text_orders.page(key, offset, k, ranked)
    return ranked(k, offset)


def search_texts(
    texts: Sequence[str], *, k: int = 50, taxon_ids: Iterable[int] | None = None, spec: ClipSpec | None = None
) -> list[list[Hit]]:
    """The top `k` of the collection for each of `texts`, encoded in one batch and ranked as one (on the GPU)
    or one after another (on the CPU): the same answers as `search(text=...)` for each."""
    for text in texts:
        _check_search(text=text, image_id=None, image=None, vector=None, k=k, offset=0)
    if not texts:
        return []
    spec = spec or configured_spec()
    loaded = _get(spec.name)
    embedder = _embedder(spec)
    if embedder.dim != loaded.backend.dim:
        _query_vector(loaded, spec, text=texts[0], image_id=None, image=None, vector=None)  # says what is wrong
    vectors = embedder.encode_text([text.strip() for text in texts])
    return search_vectors(loaded.backend, vectors, k=k, taxon_ids=taxon_ids)


def search_vectors(
    backend: VectorBackend, vectors: np.ndarray, *, k: int, taxon_ids: Iterable[int] | None = None
) -> list[list[Hit]]:
    """One ranking per unit row of `vectors`: as a batch where the backend ranks batches (CardVectors), else
    one search each (read wide: texts, fitted vectors)."""
    taxa = None if taxon_ids is None else list(taxon_ids)
    together = getattr(backend, "search_many", None)
    if together is not None:
        answers: list[list[Hit]] = together(vectors, k=k, taxon_ids=taxa)
        return answers
    return [backend.search(vector, k=k, taxon_ids=taxa, wide=True) for vector in vectors]


def _check_search(
    *, text: str | None, image_id: int | None, image: "PILImage | None", vector: object, k: int, offset: int
) -> None:
    """SearchError unless exactly one thing to rank by is given, a text is not blank, and the page is sane."""
    given = [value for value in (text, image_id, image, vector) if value is not None]
    if len(given) != 1:
        raise SearchError("Search by exactly one of: a text, an image id, an uploaded image, or a vector.")
    if text is not None and not text.strip():
        raise SearchError("The query text is empty: type what the images should show.")
    if not isinstance(k, int) or not isinstance(offset, int) or k < 1 or offset < 0:
        raise SearchError("k must be a positive whole number and offset zero or more.")
    if k > 10_000:
        raise SearchError("k is at most 10,000 per page; use offset to page further.")


def _query_vector(
    loaded: _Loaded,
    spec: ClipSpec,
    *,
    text: str | None,
    image_id: int | None,
    image: "PILImage | None",
    vector: npt.ArrayLike | None,
) -> np.ndarray:
    """The unit vector to rank by: an image's stored one, a given vector normalized, or the model's encoding
    of the text or the uploaded image."""
    if image_id is not None:
        return vector_of_image(loaded, int(image_id))
    if vector is not None:
        return _given_vector(loaded, vector)
    embedder = _embedder(spec)
    if embedder.dim != loaded.backend.dim:
        raise SearchError(
            f"The model {spec.name} gives {embedder.dim}-dimensional vectors but {loaded.backend.described} "
            f"holds {loaded.backend.dim}: embed the collection with this model, or configure the model it was "
            "made with."
        )
    if text is not None:
        encoded: np.ndarray = embedder.encode_text([text.strip()])[0]
        return encoded
    assert image is not None  # exactly one of the four was given (_check_search)
    encoded = embedder.encode_images([image])[0]
    return encoded


def _given_vector(loaded: _Loaded, vector: npt.ArrayLike) -> np.ndarray:
    query = np.asarray(vector, dtype=np.float32).reshape(-1)
    if query.shape[0] != loaded.backend.dim:
        raise SearchError(f"The vector has {query.shape[0]} dimensions; this index has {loaded.backend.dim}.")
    if not np.all(np.isfinite(query)) or not np.any(query):
        raise SearchError("The vector must be finite and not all zeros.")
    normalized: np.ndarray = query / np.linalg.norm(query)
    return normalized


def score_images(request: RankingRequest, image_ids: Iterable[int]) -> np.ndarray:
    """The score of each image under the request's ranking (NaN for an image without a vector): where
    labeled images sit in a query's ranking, without ranking the whole collection."""
    spec = request.spec or configured_spec()
    loaded = _get(spec.name)
    ids = np.asarray(list(image_ids), dtype=np.int64)
    scores = np.full(len(ids), np.nan, dtype=np.float32)
    if not len(ids):
        return scores
    vector = _scoring_vector(loaded, spec, request)
    on_card = getattr(loaded.backend, "score", None)  # a lasso's images, scored where the vectors are
    if on_card is not None:
        found_scores, found = on_card(ids, vector)
        scores[found] = found_scores
        return scores
    fetched = loaded.backend.fetch(ids)
    scores[fetched.found] = inner_products(fetched.vectors, vector)
    return scores


def _scoring_vector(loaded: _Loaded, spec: ClipSpec, request: RankingRequest) -> np.ndarray:
    """What score_images and score_collection take inner products with: the text's vector, or the strategy's."""
    if request.strategy == "text":
        vector: np.ndarray = _embedder(spec).encode_text([request.text or ""])[0]
        return vector
    return _strategy_vector(loaded, spec, request)


def score_collection(request: RankingRequest) -> tuple[np.ndarray, np.ndarray]:
    """(image ids, scores): every stored image's score under the request's ranking, read from the embedding
    store in blocks (the map's "colour by score": 2.6 s at 1M on two cores, so on demand only)."""
    spec = request.spec or configured_spec()
    vector = _scoring_vector(_get(spec.name), spec, request)
    embeddings = EmbeddingStore.existing(store_root(), spec.name).load()
    scores = np.empty(len(embeddings), dtype=np.float32)
    block = 100_000
    for start in range(0, len(embeddings), block):
        scores[start : start + block] = inner_products(embeddings.vectors[start : start + block], vector)
    return embeddings.image_ids, scores


def embed_image(image: "PILImage", spec: ClipSpec | None = None) -> np.ndarray:
    """An uploaded PIL image's vector (float32, unit length) under the configured model."""
    return np.asarray(_embedder(spec or configured_spec()).encode_images([image])[0], dtype=np.float32)


def _vectors_of(loaded: _Loaded, image_ids: Iterable[int]) -> np.ndarray:
    """The stored vectors (float32, one row each) of those of `image_ids` that have one."""
    ids = np.asarray(sorted({int(i) for i in image_ids}), dtype=np.int64)
    if not len(ids):
        return np.empty((0, loaded.backend.dim), dtype=np.float32)
    vectors: np.ndarray = loaded.backend.fetch(ids).vectors.astype(np.float32)
    return vectors


def rank(request: RankingRequest, *, k: int = 50, offset: int = 0) -> list[Hit]:
    """Rank the collection with one of strategies.STRATEGIES (see search.facade.rank)."""
    if not isinstance(k, int) or not isinstance(offset, int) or not 1 <= k <= 10_000 or offset < 0:
        raise SearchError("k must be a whole number from 1 to 10,000 and offset zero or more.")
    spec = request.spec or configured_spec()
    loaded = _get(spec.name)
    vector = _strategy_vector(loaded, spec, request)
    return loaded.backend.search(
        np.asarray(vector, dtype=np.float32),
        k=k,
        offset=offset,
        taxon_ids=request.taxa,
        exclude_image_ids=request.exclude_image_ids,
        wide=True,  # texts, fitted and fused vectors: off the images' distribution (Searcher)
    )


class _Indexed:
    """The loaded index as search.batches sees a collection (restricted to `taxon_ids` when given). The
    order by `text` is remembered between batches (search/text_orders.py)."""

    def __init__(self, loaded: _Loaded, taxon_ids: list[int] | None, text: np.ndarray | None = None) -> None:
        self.loaded, self.taxon_ids = loaded, taxon_ids
        self.text = None if text is None else np.asarray(text, dtype=np.float32)

    def top(self, vector: np.ndarray, depth: int, exclude: set[int]) -> list[int]:
        vector = np.asarray(vector, dtype=np.float32)
        if self.text is not None and np.array_equal(vector, self.text) and self.loaded.text_orders is not None:
            key = (vector.tobytes(), None if self.taxon_ids is None else tuple(sorted(self.taxon_ids)))
            return self.loaded.text_orders.top(
                key, depth, exclude, lambda wanted, out: self._search(vector, wanted, out)
            )
        return self._search(vector, depth, exclude)

    def _search(self, vector: np.ndarray, depth: int, exclude: set[int]) -> list[int]:
        hits = self.loaded.backend.search(
            vector, k=depth, taxon_ids=self.taxon_ids, exclude_image_ids=exclude, wide=True
        )
        return [hit.image_id for hit in hits]

    def vectors(self, image_ids: Sequence[int]) -> np.ndarray:
        vectors: np.ndarray = self.loaded.backend.fetch(np.asarray(list(image_ids), dtype=np.int64)).vectors
        return vectors.astype(np.float32)


def next_batch(request: RankingRequest, *, recent: Sequence[tuple[int, bool]] = (), k: int = 50) -> list[Hit]:
    """The next `k` images to label under the request's strategy (see search.facade.next_batch)."""
    if not isinstance(k, int) or not 1 <= k <= 1000:
        raise SearchError("A batch to label is 1 to 1,000 images.")
    spec = request.spec or configured_spec()
    loaded = _get(spec.name)
    taxa = request.taxa
    chosen, inputs = _ranking_inputs(loaded, spec, request)
    vector = np.asarray(_vector_from(chosen, inputs, loaded), dtype=np.float32)
    exclude = request.labeled_or_excluded
    if request.strategy == "text":  # the control: the plain text order, as INQUIRE ranked it
        return loaded.backend.search(vector, k=k, taxon_ids=taxa, exclude_image_ids=exclude, wide=True)
    floor = _text_floor(spec, request, inputs)
    # The labels' vectors the fit read; a ranking that does not learn from labels reads them for the rules.
    learned = chosen.learns_from_labels
    with_vector = set(_with_vectors(loaded, [image_id for image_id, _ in recent]))
    picks = batches.compose(
        _Indexed(loaded, taxa, floor), learned=vector, text=floor, k=k, exclude=exclude,
        relevant=inputs.relevant if learned else _vectors_of(loaded, request.relevant_ids),
        not_relevant=inputs.not_relevant if learned else _vectors_of(loaded, request.not_relevant_ids),
        recent=[(image_id, answer) for image_id, answer in recent if image_id in with_vector],
        threshold=loaded.lookalikes.threshold,
    )  # fmt: skip
    return _scored(loaded, picks, vector)


def _scored(loaded: _Loaded, picks: list[batches.Pick], vector: np.ndarray) -> list[Hit]:
    """The batch's picks as hits, each scored under the learned ranking (every pick was ranked, so every pick has a
    vector)."""
    if not picks:
        return []
    fetched = loaded.backend.fetch(np.asarray([pick.image_id for pick in picks], dtype=np.int64))
    scores = inner_products(fetched.vectors, vector)
    return [
        Hit(pick.image_id, float(score), int(taxon), source=pick.source, stack=tuple(pick.stack))
        for pick, score, taxon in zip(picks, scores, fetched.taxon_ids, strict=True)
    ]


def _text_floor(spec: ClipSpec, request: RankingRequest, inputs: strategies.RankingInputs) -> np.ndarray | None:
    """The text order is every ranking's floor where the query has a text: "like the example images" too, which
    does not rank by it (the encoder keeps the text's vector: no second encoding)."""
    typed = (request.text or "").strip()
    if inputs.text is not None or not typed:
        return inputs.text
    floor: np.ndarray = _embedder(spec).encode_text([typed])[0]
    return floor


def lookalike_rule(spec: ClipSpec | None = None) -> lookalikes.LookAlikeRule:
    """When two images of the collection are look-alikes, for its model (search/lookalikes.py)."""
    return _get((spec or configured_spec()).name).lookalikes


def with_vectors(image_ids: Iterable[int], spec: ClipSpec | None = None) -> list[int]:
    """Those of `image_ids` that have a vector in the configured backend (the images a ranking can show), in their
    order."""
    return _with_vectors(_get((spec or configured_spec()).name), image_ids)


def _with_vectors(loaded: _Loaded, image_ids: Iterable[int]) -> list[int]:
    """Those of `image_ids` that have a vector, in their order."""
    ids = np.asarray([int(i) for i in image_ids], dtype=np.int64)
    if not len(ids):
        return []
    return [int(i) for i in ids[loaded.backend.fetch(ids).found]]


def _strategy_vector(loaded: _Loaded, spec: ClipSpec, request: RankingRequest) -> np.ndarray:
    """The vector the request's strategy (one of strategies.REGISTRY) ranks by, from the text, the labels'
    and the examples' vectors."""
    chosen, inputs = _ranking_inputs(loaded, spec, request)
    return _vector_from(chosen, inputs, loaded)


def _ranking_inputs(
    loaded: _Loaded, spec: ClipSpec, request: RankingRequest
) -> tuple[strategies.Strategy, strategies.RankingInputs]:
    """The request's strategy and what it ranks from: the text's vector (when it needs one), the labels'
    vectors (when it learns from them), the examples' vectors and the collection's best match."""
    try:
        chosen = strategies.strategy(request.strategy)
    except ValueError as error:
        raise SearchError(str(error)) from None
    examples = _vectors_of(loaded, request.example_ids)
    if request.example_images:
        examples = np.vstack([examples, _embedder(spec).encode_images(list(request.example_images))])
    if request.example_vectors:
        given = np.asarray(request.example_vectors, dtype=np.float32).reshape(-1, loaded.backend.dim)
        examples = np.vstack([examples, given])
    taxa = request.taxa

    def best_match(vector: np.ndarray) -> np.ndarray:
        top = loaded.backend.search(np.asarray(vector, dtype=np.float32), k=1, taxon_ids=taxa)
        return _vectors_of(loaded, [hit.image_id for hit in top])

    typed = (request.text or "").strip()  # no text, or only blanks: None below, which vector_for refuses
    learns = chosen.learns_from_labels
    inputs = strategies.RankingInputs(
        text=_embedder(spec).encode_text([typed])[0] if chosen.needs_text and typed else None,
        relevant=_vectors_of(loaded, request.relevant_ids if learns else ()),
        not_relevant=_vectors_of(loaded, request.not_relevant_ids if learns else ()),
        examples=examples,
        best_match=best_match,
    )
    return chosen, inputs


def _vector_from(chosen: strategies.Strategy, inputs: strategies.RankingInputs, loaded: _Loaded) -> np.ndarray:
    """The strategy's vector from its inputs; SearchError (its sentence) when an input it needs is missing."""
    try:
        vector = chosen.vector_for(inputs)
    except ValueError as error:
        raise SearchError(str(error)) from None
    if vector.shape[0] != loaded.backend.dim:
        raise SearchError(f"The query vector has {vector.shape[0]} dimensions; this index has {loaded.backend.dim}.")
    return vector
