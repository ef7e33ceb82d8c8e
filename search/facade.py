"""The search engine's one public door. Code outside search/ imports from here only.

    from search.facade import Hit, SearchUnavailable, search, score_images

Every way a search can fail (no index yet, weights that cannot load, a store of another
model, a vector database away, a search asked wrongly) raises a subclass of SearchUnavailable
whose text says what to do; callers catch the base class. SearchNotReady, its subclass, is
the engine's side (nothing wrong with the search asked): web callers answer it 503.

Importing this module is cheap: FAISS, torch and open_clip load on the first search that
needs them, so commands and pages that never search start fast.
"""

import threading
from collections.abc import Iterable, Sequence
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import numpy.typing as npt

from . import layout, polygon, strategies
from .batches import WINDOW as RECENT_ANSWERS
from .batches import compose as compose_batch
from .exceptions import NoMap, SearchError, SearchNotReady, SearchUnavailable
from .layout import Layout
from .lookalikes import LookAlikeRule
from .polygon import BadPolygon, Polygon
from .request import RankingRequest
from .results import Hit
from .spec import WARM_UP_AT_START, ClipSpec, configured_spec, index_folder
from .store import NO_TAXON
from .strategies import LABEL_ONLY_STRATEGIES, STRATEGIES, reciprocal_rank_fusion
from .strategies import REGISTRY as STRATEGY_REGISTRY

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage

__all__ = [
    "BadPolygon",
    "ClipSpec",
    "Hit",
    "Layout",
    "NoMap",
    "Polygon",
    "images_within",
    "map_of",
    "parse_polygon",
    "NO_TAXON",
    "SearchError",
    "SearchNotReady",
    "SearchUnavailable",
    "configured_spec",
    "embed_image",
    "ensure_torchvision_ops",
    "fuse_rankings",
    "has_index",
    "vector_database_problem",
    "warm_up",
    "WARM_UP_AT_START",
    "prepare_demo_model",
    "write_random_model",
    "rank",
    "next_batch",
    "compose_batch",
    "lookalike_rule",
    "LookAlikeRule",
    "RECENT_ANSWERS",
    "RankingRequest",
    "LABEL_ONLY_STRATEGIES",
    "STRATEGIES",
    "STRATEGY_REGISTRY",
    "score_collection",
    "score_images",
    "strategy_vector",
    "search",
    "search_texts",
]


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
    """Rank the collection by similarity to exactly one of: a `text`, an image of the collection
    (`image_id`), an uploaded PIL `image`, or a `vector` (any length-dim float array; normalised here).

    `taxon_ids`: species ids to restrict to (callers expand a genus or family to its species);
    that subset is ranked exactly. `exclude_image_ids`: ids to leave out (e.g. labeled ones).
    Returns hits `offset` .. `offset + k - 1` of the ranking, best first, ties broken by image
    id, so consecutive pages join up. `k` is 1 to 10,000. Scores are inner products of unit
    vectors (cosine similarity, -1 to 1). `spec` defaults to the configured model.

    Raises SearchUnavailable (its text says what to change).
    """
    from .engine import search as engine_search  # FAISS and the store: only when something is searched

    return engine_search(
        text=text,
        image_id=image_id,
        image=image,
        vector=vector,
        k=k,
        offset=offset,
        taxon_ids=taxon_ids,
        exclude_image_ids=exclude_image_ids,
        spec=spec,
    )


def search_texts(
    texts: Sequence[str], *, k: int = 50, taxon_ids: Iterable[int] | None = None, spec: ClipSpec | None = None
) -> list[list[Hit]]:
    """The top `k` hits for each of `texts`, as `search(text=...)` gives them one by one, with the texts encoded
    in one batch and, on a GPU host, ranked in one batch (an evaluation's 250 queries, a simulation's). Raises
    SearchUnavailable like `search`."""
    from .engine import search_texts as engine_search_texts  # FAISS and the store: only when something is searched

    return engine_search_texts(texts, k=k, taxon_ids=taxon_ids, spec=spec)


def rank(
    *,
    strategy: str,
    text: str | None = None,
    relevant_ids: Iterable[int] = (),
    not_relevant_ids: Iterable[int] = (),
    example_ids: Iterable[int] = (),
    example_images: Iterable["PILImage"] = (),
    example_vectors: Iterable[npt.ArrayLike] = (),
    k: int = 50,
    offset: int = 0,
    taxon_ids: Iterable[int] | None = None,
    exclude_image_ids: Iterable[int] | None = None,
    spec: ClipSpec | None = None,
) -> list[Hit]:
    """Rank the collection with a strategy that may learn from labels and examples (search/strategies.py):

      text      by the `text` alone (INQUIRE's ranking)
      feedback  SeeSaw's logistic regression on the vectors of `relevant_ids` and `not_relevant_ids`,
                held to the text vector
      rocchio   the text vector moved toward the relevant images and away from the not relevant ones
      image     "more like this": the examples (`example_ids` of the collection, `example_images` as PIL
                images, `example_vectors` from embed_image) without the text
      fusion    the mean of the text's and the examples' similarities
      alpha_qe  the text expanded by its best match (alpha query expansion)

    Ids are image ids; the caller passes labels as ids (search knows nothing of queries). `k`,
    `offset`, `taxon_ids` and `exclude_image_ids` as for search(). Raises SearchUnavailable.
    """
    from .engine import rank as engine_rank  # FAISS and the store: only when something is searched

    request = RankingRequest.of(
        strategy=strategy,
        text=text,
        relevant_ids=relevant_ids,
        not_relevant_ids=not_relevant_ids,
        example_ids=example_ids,
        example_images=example_images,
        example_vectors=list(example_vectors),
        taxon_ids=taxon_ids,
        exclude_image_ids=exclude_image_ids,
        spec=spec,
    )
    return engine_rank(request, k=k, offset=offset)


def next_batch(
    *,
    strategy: str,
    text: str | None = None,
    relevant_ids: Sequence[int] = (),
    not_relevant_ids: Sequence[int] = (),
    recent: Sequence[tuple[int, bool]] = (),
    example_ids: Iterable[int] = (),
    example_vectors: Sequence[npt.ArrayLike] = (),
    k: int = 50,
    taxon_ids: Iterable[int] | None = None,
    exclude_image_ids: Iterable[int] = (),
    spec: ClipSpec | None = None,
) -> list[Hit]:
    """The next `k` images an annotator should label under `strategy` (as for rank()), none of the
    labeled ones (`relevant_ids`, `not_relevant_ids`) or `exclude_image_ids`.

    `text` is the plain text order (INQUIRE's control). Any other strategy gets search/batches.py's
    rules: one image per near-duplicate stack (Hit.stack: the look-alikes that wait behind it), and,
    where a `text` is given (whether or not the strategy ranks by it), the text order as a floor
    (Hit.source "text" for its share), judged against `recent`: the annotator's last answers on this
    query, (image id, relevant), oldest first. Raises SearchUnavailable.
    """
    from .engine import next_batch as engine_next_batch  # FAISS and the store: only when something is searched

    request = RankingRequest.of(
        strategy=strategy,
        text=text,
        relevant_ids=relevant_ids,
        not_relevant_ids=not_relevant_ids,
        example_ids=example_ids,
        example_vectors=list(example_vectors),
        taxon_ids=taxon_ids,
        exclude_image_ids=exclude_image_ids,
        spec=spec,
    )
    return engine_next_batch(request, recent=list(recent), k=k)


def lookalike_rule(spec: ClipSpec | None = None) -> "LookAlikeRule":
    """When two images of the collection are look-alikes for its model: the cosine at which a candidate stacks
    behind a better one, or stacks off with the sentence why (search/lookalikes.py). Raises SearchUnavailable."""
    from .engine import lookalike_rule as engine_rule  # FAISS and the store: only when something is searched

    return engine_rule(spec)


def strategy_vector(
    strategy: str,
    text: npt.ArrayLike,
    relevant: npt.ArrayLike = (),
    not_relevant: npt.ArrayLike = (),
    examples: npt.ArrayLike = (),
    collection: npt.ArrayLike | None = None,
) -> np.ndarray:
    """The vector a strategy of STRATEGY_REGISTRY ranks by, from vectors given directly (unit rows): for
    simulations and research over vectors that are not in the store. alpha_qe needs the `collection`'s
    rows to find the text's best match in. ValueError (a sentence) for an unknown strategy or a missing input."""
    chosen = strategies.strategy(strategy)
    query = strategies.unit_vector(np.asarray(text))
    dim = query.shape[0]

    def rows(vectors: npt.ArrayLike) -> np.ndarray:
        return strategies.as_rows(vectors, dim, np.float32)

    inputs = strategies.RankingInputs(query, rows(relevant), rows(not_relevant), rows(examples))
    if collection is not None:
        everything = rows(collection)
        inputs = replace(
            inputs, best_match=lambda vector: everything[[int(np.argmax(everything @ vector.astype(np.float32)))]]
        )
    return chosen.vector_for(inputs)


def rankable(image_ids: Iterable[int], spec: ClipSpec | None = None) -> list[int]:
    """Those of `image_ids` a ranking can show (they have a vector in the configured backend: not those an embedding
    job skipped as unreadable, nor those added since), in their order. Raises SearchUnavailable."""
    from .engine import with_vectors  # FAISS and the store: only when something is searched

    return with_vectors(image_ids, spec)


def score_images(
    *,
    text: str,
    image_ids: Iterable[int],
    strategy: str = "text",
    relevant_ids: Iterable[int] = (),
    not_relevant_ids: Iterable[int] = (),
    example_ids: Iterable[int] = (),
    example_vectors: Iterable[npt.ArrayLike] = (),
    spec: ClipSpec | None = None,
) -> np.ndarray:
    """The score of each of `image_ids` under a strategy's ranking (default: similarity to `text`), as
    a float32 numpy array in the same order (NaN for an image without a vector): where given images
    sit in a ranking, without ranking the whole collection. Raises SearchUnavailable."""
    from .engine import score_images as engine_score_images  # FAISS and the store: only when something is searched

    request = _scoring_request(text, strategy, relevant_ids, not_relevant_ids, example_ids, example_vectors, spec)
    return engine_score_images(request, image_ids)


def score_collection(
    *,
    text: str,
    strategy: str = "text",
    relevant_ids: Iterable[int] = (),
    not_relevant_ids: Iterable[int] = (),
    example_ids: Iterable[int] = (),
    example_vectors: Iterable[npt.ArrayLike] = (),
    spec: ClipSpec | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """(image ids, scores as float32): every embedded image's score under a strategy's ranking, in the store's
    order; score_images for the whole collection, read in blocks (2.6 s at 1M on two cores). Raises
    SearchUnavailable."""
    from .engine import score_collection as engine_score_collection  # FAISS and the store: only when asked

    request = _scoring_request(text, strategy, relevant_ids, not_relevant_ids, example_ids, example_vectors, spec)
    return engine_score_collection(request)


def _scoring_request(
    text: str,
    strategy: str,
    relevant_ids: Iterable[int],
    not_relevant_ids: Iterable[int],
    example_ids: Iterable[int],
    example_vectors: Iterable[npt.ArrayLike],
    spec: ClipSpec | None,
) -> RankingRequest:
    """score_images' and score_collection's request: a ranking's inputs, without taxa or exclusions."""
    return RankingRequest.of(
        strategy=strategy,
        text=text,
        relevant_ids=relevant_ids,
        not_relevant_ids=not_relevant_ids,
        example_ids=example_ids,
        example_vectors=list(example_vectors),
        spec=spec,
    )


def embed_image(image: "PILImage", spec: ClipSpec | None = None) -> np.ndarray:
    """An uploaded PIL image's vector (float32, unit length), to keep with a query as an example and
    rank by later (rank's `example_vectors`) without encoding it again. Raises SearchUnavailable."""
    from .engine import embed_image as engine_embed_image  # FAISS and the store: only when something is searched

    return engine_embed_image(image, spec)


def warm_up(spec: ClipSpec | None = None, *, store: bool = True) -> str:
    """Load the index, the embeddings and the CLIP text encoder into this process now, and run one
    search, so a web worker's first request does not pay for them (the 2026 audit: 13 s for the
    labeling page and 41 s for the candidates API on a busy machine). Then, with `store`, read the
    embedding store into the page cache in a background thread (search.store.warm: after a restart, the
    first searches re-score their candidates from disk one page at a time). Returns a sentence for the
    log; raises nothing (a deployment with no index yet still starts)."""
    spec = spec or configured_spec()
    try:
        search(text="a photo", k=1, spec=spec)
    except SearchUnavailable as error:
        return f"search not warmed up: {error}"
    said = f"search warmed up: {spec.name}'s index and text encoder are loaded"
    if store:
        from .engine import warm_store  # FAISS and the store: only when something is searched

        threading.Thread(target=warm_store, args=(spec,), name="quire-warm-store", daemon=True).start()
        said += "; its embedding store is being read into the page cache"
    return said


def has_index(spec: ClipSpec | None = None) -> bool:
    """Whether a search index has been built for `spec` (default: the configured model)."""
    return (index_folder((spec or configured_spec()).name) / "current.json").exists()


def vector_database_problem(timeout: float = 3.0) -> str | None:
    """Why the vector database at QUIRE_MILVUS_URI cannot be reached (the error's class name), or None when it
    answers: for health checks. Only where QUIRE_VECTOR_BACKEND=milvus."""
    from .milvus import problem  # pymilvus: only where Milvus is configured

    return problem(timeout)


def prepare_demo_model(data_dir: Path) -> tuple[ClipSpec, str | None]:
    """The model the offline demo uses: the configured one when its weights are here, else a tiny
    random-weight stand-in written under `data_dir`. Returns (spec, why the stand-in is used or None)."""
    from .demo import demo_model  # the demo's model files: only for the demo

    return demo_model(data_dir)


def write_random_model(folder: Path) -> str:
    """Write a tiny random-weight CLIP model (open_clip's local-dir format) into `folder`, for trying a
    deployment with no real weights; returns the QUIRE_CLIP_PRETRAINED value that loads it."""
    from .tiny_model import write_tiny_model  # torch and open_clip

    return write_tiny_model(folder)


def fuse_rankings(rankings: Iterable[Iterable[int]], *, k: float = 1.0) -> list[tuple[int, float]]:
    """Reciprocal rank fusion of rankings (lists of image ids, best first): score = sum of 1 / (k + rank),
    ranks from 1 (Cormack et al. 2009; k = 1 as VisRet uses it). Returns (id, score) best first."""
    return reciprocal_rank_fusion(rankings, k=k)


def ensure_torchvision_ops() -> None:
    """Make `import torchvision` work with the CPU build of torch (search/torchvision_ops.py): for other
    apps that load models using torchvision, such as transformers' image processors."""
    from .torchvision_ops import ensure_torchvision_ops as ensure  # torch

    ensure()


def map_of(spec: ClipSpec | None = None) -> Layout:
    """The map of the collection under the configured model (search/layout.py): every placed image's id and
    x, y. Raises NoMap (a SearchNotReady) until `manage.py map_layout` has computed it."""
    return layout.load((spec or configured_spec()).name)


def parse_polygon(text: str) -> Polygon:
    """A lasso's polygon from its `within=` text; BadPolygon (a ValueError with a sentence) otherwise."""
    return polygon.parse(text)


def images_within(shape: Polygon, spec: ClipSpec | None = None) -> np.ndarray:
    """The ids (int64, ascending) of the images whose stored map position lies inside `shape` or on its edge."""
    stored = map_of(spec)
    inside: np.ndarray = stored.image_ids[shape.contains(stored.xy)]
    return inside
