"""FAISS indexes over the embedding store: building, saving, loading, and the Searcher that ranks
the rows of one loaded index. The search function callers use is search.facade.search.

Kinds:
  flat      exact inner product. The index holds the vectors as float16, the same
            numbers as the store, so its scores are the store's scores. For small
            collections (searched on the CPU, also where a GPU is present).
  fastscan  for millions of vectors on a CPU (auto's choice above AUTO_FLAT_LIMIT): IVF over the full
            vectors with 1-bit RaBitQ codes (Gao and Long, "RaBitQ", SIGMOD 2024; FAISS's
            IndexIVFRaBitQFastScan), scanned with SIMD registers as lookup tables (FAISS's fast-scan,
            after André, Kermarrec and Le Scouarnec, "PQ Fast Scan", VLDB 2015). It only proposes
            candidates; they are re-scored exactly from the float16 store. Its labels are image ids, not
            store rows, so new images are added to a trained index without a rebuild (`update`), and
            consolidation may reorder the store.
            Chosen by measurement on embeddings shaped like CLIP's (bench/realistic.py, bench/RESULTS.md):
            the earlier codes (PCA to a quarter of the dimensions, then 4-bit PQ) held recall@50 0.995 on
            evenly spread clusters but 0.06 for text queries on realistic ones. FAISS's PCA subtracts
            the collection's mean from the query too, and for inner products (q - m).(x - m) ranks images
            by their distance from the common mean, not by the query: a text query's own signal, weak
            across the modality gap, drowned. RaBitQ at full dimension gave the best recall per list
            probed; its 147 bytes a vector are 735 MB at 5M. Indexes built with the earlier codes still
            load (`codes="pq4"` builds them for comparison).
  ivfpq     IVF (HNSW-assigned lists) with 8-bit PQ: the previous CPU kind, still loaded and
            built on request; about 4x slower to build and to search than fastscan (bench/RESULTS.md).

A species (or any taxon set) filter never goes through the approximate index: the
whole subset is ranked exactly, using the store's aligned taxon-id array
(INQUIRE labeled comprehensively inside species filters).
"""

import json
import math
import os
import threading
from collections.abc import Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any, NamedTuple

import faiss as _faiss
import numpy as np

from common.files import write_atomically

from .exceptions import NoIndex
from .results import Hit
from .store import Embeddings

# FAISS's SWIG-generated type information lacks much of what is used here (fvec_inner_products_ny, the search
# parameters' keywords, IndexIVFPQ's fields): the module is read as untyped rather than wrongly typed.
faiss: Any = _faiss

# Up to this many vectors an exact scan is fast enough on a CPU: it costs about 0.22 ms per
# thousand 1024-d vectors on 2 cores (1.1 s at 5M, bench/RESULTS.md), so about 55 ms here.
AUTO_FLAT_LIMIT = 250_000
IVFPQ_MINIMUM = 1_000  # PQ trains 256 centroids per sub-quantizer: fewer points cannot train it
KINDS = ("auto", "flat", "fastscan", "ivfpq")
# A fast-scan index takes new images without retraining until the collection is this many times the
# size it was trained on; then its lists are too long for the nprobe searched and it is rebuilt.
RETRAIN_GROWTH = 2.0


def inner_products(vectors_fp16: np.ndarray, query: np.ndarray) -> np.ndarray:
    """float16 rows . float32 query, with FAISS's SIMD kernels.

    numpy's float16 -> float32 astype and its BLAS matvec were most of a 5,000-image species
    search (8 ms of 13); torch was quicker alone but its thread pool fought FAISS's OpenMP one
    and slowed the unfiltered search by a third (bench/RESULTS.md). FAISS's decoder and
    fvec_inner_products_ny stay in FAISS's own runtime.
    """
    count, dim = vectors_fp16.shape
    decoded = _FP16[dim].decode(np.ascontiguousarray(vectors_fp16).view(np.uint8).reshape(count, 2 * dim))
    query = np.ascontiguousarray(query, dtype=np.float32)
    out = np.empty(count, dtype=np.float32)
    faiss.fvec_inner_products_ny(faiss.swig_ptr(out), faiss.swig_ptr(query), faiss.swig_ptr(decoded), dim, count)
    return out


class _Decoders(dict[int, Any]):
    """One float16 scalar quantizer (FAISS's decoder) per dimension, made on first use."""

    def __missing__(self, dim: int) -> Any:
        self[dim] = faiss.ScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16)
        return self[dim]


_FP16 = _Decoders()

# A top k of many rows (a species, an index's candidates) is found without scoring every row into an
# array: FAISS's fused float16 inner-product scan straight over the memory map (no float32 widening),
# split between two threads from 2 x SCAN_MINIMUM rows. 5,400 rows of a species: 1.3 to 1.7 ms, against
# 7 to 8 ms widening them first; 1,000 scattered candidates: 0.6 ms against 1.7 ms.
SCAN_MINIMUM = 2_000
_SCAN_THREADS = max(1, min(2, os.cpu_count() or 1))
_scan_pool = (
    ThreadPoolExecutor(max_workers=_SCAN_THREADS, thread_name_prefix="quire-scan") if _SCAN_THREADS > 1 else None
)


def _scan_runs(
    vectors: np.ndarray, runs: list[tuple[int, int]], query: np.ndarray, k: int
) -> tuple[np.ndarray, np.ndarray]:
    """The k best rows by inner product among the row ranges `runs` ([start, end) of a float16 memmap),
    as (scores, rows), unordered. FAISS's scalar-quantizer scanner (the IVF-SQ list scanner) reads the
    float16 codes in place; its labels are (range number << 32 | offset), decoded here."""
    dim = vectors.shape[1]
    scanner = _FP16[dim].select_InvertedListScanner(faiss.METRIC_INNER_PRODUCT, None, True, None)
    scanner.set_query(faiss.swig_ptr(query))
    scores = np.full(k, -np.inf, dtype=np.float32)  # a min-heap of the k best; -inf is its empty value
    labels = np.full(k, -1, dtype=np.int64)
    for number, (start, end) in enumerate(runs):
        codes = np.ascontiguousarray(vectors[start:end]).view(np.uint8)
        scanner.set_list(number, 0)
        scanner.scan_codes(end - start, faiss.swig_ptr(codes), None, faiss.swig_ptr(scores), faiss.swig_ptr(labels), k)
    found = labels >= 0
    starts = np.array([start for start, _ in runs], dtype=np.int64)
    labels = labels[found]
    return scores[found], starts[labels >> 32] + (labels & 0xFFFFFFFF)


def top_rows(vectors: np.ndarray, rows: np.ndarray, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The k best of sorted, unique `rows` by exact inner product (float16 store . float32 query), as
    (scores, rows), unordered: the contiguous runs of `rows` (a species, in the taxon-ordered store) are
    scanned in place, in two halves on two threads when there are enough of them."""
    query = np.ascontiguousarray(query, dtype=np.float32)
    breaks = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = rows[np.concatenate([[0], breaks])].tolist()
    ends = (rows[np.concatenate([breaks - 1, [len(rows) - 1]])] + 1).tolist()
    runs = list(zip(starts, ends, strict=True))
    if len(runs) > max(1, len(rows) // 64):  # scattered rows: gather them, then scan the copy
        gathered = np.ascontiguousarray(vectors[rows])
        scores, positions = _scan_runs(gathered, [(0, len(rows))], query, k)
        return scores, rows[positions]
    if _scan_pool is None or len(rows) < 2 * SCAN_MINIMUM:
        return _scan_runs(vectors, runs, query, k)
    halves = _split(runs, len(rows) // 2)
    other = _scan_pool.submit(_scan_runs, vectors, halves[1], query, k)
    first = _scan_runs(vectors, halves[0], query, k)
    second: tuple[np.ndarray, np.ndarray] = other.result()
    scores, found = np.concatenate([first[0], second[0]]), np.concatenate([first[1], second[1]])
    if len(scores) > k:
        best = np.argpartition(-scores, k - 1)[:k]
        scores, found = scores[best], found[best]
    return scores, found


def _split(runs: list[tuple[int, int]], rows_in_first: int) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Two lists of ranges covering `runs`, the first holding about `rows_in_first` rows."""
    first: list[tuple[int, int]] = []
    second: list[tuple[int, int]] = []
    taken = 0
    for start, end in runs:
        if taken >= rows_in_first:
            second.append((start, end))
        elif taken + (end - start) <= rows_in_first:
            first.append((start, end))
            taken += end - start
        else:
            middle = start + (rows_in_first - taken)
            first.append((start, middle))
            second.append((middle, end))
            taken = rows_in_first
    return first, second


class Breadth(NamedTuple):
    """How much of an IVF index one search reads: lists probed, and candidates re-scored exactly."""

    nprobe: int
    rerank: int


# The share of a RaBitQ fast-scan index's lists probed, and the candidates re-scored, for an image query and
# for a wide one (a text, a fitted vector). Measured on the realistic world (bench/realistic_search_bench.py,
# bench/RESULTS.md): at 5M, image queries reach recall@50 0.985 at 2% of the lists (0.966 at 1%, 0.994 at
# 4% for twice the time); text queries need a quarter of them and 10,000 candidates for 0.978. A text's
# ranking is searched once and kept (search/text_orders.py), so it buys recall with time. Small collections
# have few lists and a genus in each: a floor of lists keeps their recall (at 200k, 18 lists gave image
# queries 0.92, 40 gave 0.978).
IMAGE_SHARE, IMAGE_LISTS, IMAGE_RERANK = 0.02, 40, 1000
WIDE_SHARE, WIDE_LISTS, WIDE_RERANK = 0.25, 160, 10_000


# A search reads as far as its own results say it must (issue 41). The first breadth (narrow, or wide when the
# caller says the vector is a text) is read; then two signs that it was too narrow are checked, and the
# search is read again wider until neither shows, or, past the wide breadth, every image is ranked exactly:
#   lists     one of the best results came from the back half of the lists probed: the lists' order (by
#             centroid score) is a poor guide for this vector, so unprobed lists likely hold more. For an image,
#             its best images lie in its first few lists; for a vector off the images' distribution (a text
#             across the modality gap, a fitted or outside vector) the centroid scores are nearly flat and the
#             best images spread over many lists.
#   candidates  the codes' estimates are too rough for this vector: the last candidate re-scored might still
#             hide a better one. The estimates' error is measured on the results themselves (exact minus
#             estimated score over the best found: mean + ESTIMATE_MARGIN standard deviations), and the
#             candidates are widened while the last candidate's estimate plus it still reaches the worst result.
# Both read the best CHECKED results (the first page), whatever page was asked for: the breadth a vector ends
# at is then the same for every page up to half the candidates, so consecutive pages join up as before.
# Widening probes twice the lists and re-scores twice the candidates, at least the wide breadth's. Past the wide
# breadth every image is ranked exactly instead: at 1M, reading half the lists costs about half an exact ranking,
# and a vector the wide breadth cannot serve mostly needed that too (bench/RESULTS.md: one more approximate
# round before it put the text-like p95 at 400 ms, against the exact ranking's 160).
# Adaptive probing after Li, Zhang, Andersen and He, "Improving Approximate Nearest Neighbor Search through
# Learned Adaptive Early Termination" (SIGMOD 2020), with the learned model replaced by these two checks, which
# need no training queries; chosen over RoarGraph-style graphs (hours to build at 5M on 2 cores) by measurement
# on worlds of several shapes (bench/ood_search_bench.py, bench/RESULTS.md).
CHECKED = 50
DEEP_ALLOWED = 0  # best results from the back half of the lists probed that do not widen the search
ESTIMATE_MARGIN = 2.0


def _default_breadths(index: "_faiss.Index", labels: str) -> tuple[Breadth, Breadth]:
    """(image queries, wide queries) for an IVF index: RaBitQ fast-scan probes a share of its lists
    (IMAGE_SHARE, WIDE_SHARE); the earlier kinds keep their measured settings for both: PQ4 fast-scan
    16 lists and 1,000 candidates, ivfpq 32 and 500 (bench/RESULTS.md, history)."""
    ivf = faiss.extract_index_ivf(index)
    if isinstance(faiss.downcast_index(ivf), faiss.IndexIVFRaBitQFastScan):
        nlist = ivf.nlist
        return (
            Breadth(min(nlist, max(IMAGE_LISTS, round(IMAGE_SHARE * nlist))), IMAGE_RERANK),
            Breadth(min(nlist, max(WIDE_LISTS, round(WIDE_SHARE * nlist))), WIDE_RERANK),
        )
    earlier = Breadth(16, 1000) if labels == "image_ids" else Breadth(32, 500)
    return earlier, earlier


def _search_parameters(exact: bool, breadth: Breadth, selector: Any, *, graph: bool = False) -> Any:
    """FAISS search parameters for one search: the lists to probe (and an HNSW quantizer's beam at least as
    wide), and the selector leaving excluded images out, if any. Per search, so that concurrent searches of
    different breadths share one index object."""
    if exact:
        return None if selector is None else faiss.SearchParameters(sel=selector)
    # Passed as keywords, FAISS's wrapper keeps the selector and the graph's parameters alive with `params`.
    keywords: dict[str, Any] = {"nprobe": breadth.nprobe}
    if graph:  # an HNSW quantizer must look at least as wide as the lists probed
        keywords["quantizer_params"] = faiss.SearchParametersHNSW(efSearch=max(2 * breadth.nprobe, 64))
    if selector is not None:
        keywords["sel"] = selector
    return faiss.SearchParametersIVF(**keywords)


def choose_kind(count: int, kind: str = "auto") -> str:
    if kind not in KINDS:
        raise ValueError(f"index kind must be {', '.join(KINDS[:-1])} or {KINDS[-1]}, not {kind!r}")
    if kind != "auto":
        return kind
    # GPUs do not count: where searches rank on a GPU (search/card.py) they never read the index, and the CPU
    # still needs the approximate one (a GPU host's worker whose copy does not fit, a CPU process beside it).
    return "flat" if count <= AUTO_FLAT_LIMIT else "fastscan"


def labels_of(kind: str) -> str:
    """What an index's labels are: store rows (flat, ivfpq) or image ids (fastscan)."""
    return "image_ids" if kind == "fastscan" else "rows"


FASTSCAN_CODES = ("rabitq", "pq4")


def _fastscan_factory(count: int, dim: int, codes: str = "rabitq") -> str:
    """The FAISS factory string of a fast-scan index over `count` vectors (see the module docstring)."""
    if codes == "pq4":
        return _pq4_factory(count, dim)
    if codes != "rabitq":
        raise ValueError(f"fast-scan codes are {' or '.join(FASTSCAN_CODES)}, not {codes!r}")
    nlist = _fastscan_lists(count)
    # Assigning 5M vectors of 1024 dimensions to thousands of lists is N x lists x dim: an HNSW graph over the
    # centroids finds each list in a few hundred comparisons instead (the flat quantizer was faster below ~1,000).
    quantizer = "_HNSW32" if nlist >= 2048 else ""
    return f"IVF{nlist}{quantizer},RaBitQfs"


def _fastscan_lists(count: int) -> int:
    """About sqrt(N) lists (2,236 at 5M). At 1M on the realistic world, 2,000 lists needed the same share of
    the codes scanned as 1,000 for the same recall, and scanned them slower (bench/RESULTS.md)."""
    return max(4, min(65536, int(math.sqrt(count))))


def _pq4_factory(count: int, dim: int) -> str:
    """The earlier fast-scan codes, for comparison: PCA to dim/4 (at least 64) when the vectors are wide,
    about sqrt(N)/2 lists (1,118 at 5M), and 4-bit PQ codes of 4 dimensions each. Fast and accurate on evenly
    spread clusters (recall@50 0.995 at 5M), wrong for text queries on realistic ones (module docstring)."""
    reduced = max(64, dim // 4) if dim >= 256 else dim
    nlist = max(4, min(4096, int(math.sqrt(count) / 2)))
    m = max(2, reduced // 4)
    while reduced % m:
        m -= 1
    prefix = f"PCA{reduced}," if reduced != dim else ""
    return f"{prefix}IVF{nlist},PQ{m}x4fs"


def build(
    embeddings: Embeddings,
    kind: str = "auto",
    *,
    train_size: int = 200_000,
    seed: int = 0,
    codes: str = "rabitq",
    clustering: "_faiss.Index | None" = None,
) -> "_faiss.Index":
    """Build a FAISS index over `embeddings` (labels: store rows, or image ids for fastscan, see labels_of).
    `codes`: a fast-scan index's codes, rabitq (the default) or pq4 (the earlier ones, for comparison).
    `clustering`: the index the IVF k-means assigns points with (card_clustering's, on a GPU); the index built
    is the same CPU index either way, saved and loaded as always."""
    count, dim = embeddings.vectors.shape
    kind = choose_kind(count, kind)
    index: _faiss.Index
    if kind == "fastscan":
        if count < IVFPQ_MINIMUM:
            raise ValueError(
                f"A fast-scan index needs at least {IVFPQ_MINIMUM:,} vectors to train on; there are {count:,}. "
                "Use --kind flat (exact, and fast at this size)."
            )
        index = faiss.index_factory(dim, _fastscan_factory(count, dim, codes), faiss.METRIC_INNER_PRODUCT)
        ivf = faiss.extract_index_ivf(index)
        ivf.cp.niter = 10  # rough lists are enough: candidates are re-scored exactly
        rng = np.random.default_rng(seed)
        sample_size = min(count, max(min(train_size, 50 * ivf.nlist), 40 * ivf.nlist, 20_000))
        sample = np.sort(rng.choice(count, size=sample_size, replace=False))
        _train(index, np.ascontiguousarray(embeddings.vectors[sample], dtype=np.float32), clustering)
        _add(index, embeddings, np.arange(count))
        return index
    if kind == "flat":
        index = faiss.IndexScalarQuantizer(dim, faiss.ScalarQuantizer.QT_fp16, faiss.METRIC_INNER_PRODUCT)
    else:
        if count < IVFPQ_MINIMUM:
            raise ValueError(
                f"An IVF-PQ index needs at least {IVFPQ_MINIMUM:,} vectors to train on; there are {count:,}. "
                "Use --kind flat (exact, and fast at this size)."
            )
        # About 2 * sqrt(N) lists (4,500 at 5M vectors), found through an HNSW graph over
        # the centroids: assigning 5M vectors to a flat quantizer is hours of CPU, HNSW
        # minutes. 8-bit codes of 4 dimensions each (256 bytes a vector at dim 1024);
        # candidates are re-scored exactly from the store anyway.
        nlist = max(1, min(65536, int(2 * math.sqrt(count))))
        m = _pq_subquantizers(dim)
        index = faiss.index_factory(dim, f"IVF{nlist}_HNSW32,PQ{m}", faiss.METRIC_INNER_PRODUCT)
        ivf = faiss.downcast_index(faiss.extract_index_ivf(index))
        # Candidates are re-scored exactly, so rougher codes are enough: 10 k-means rounds
        # instead of 25, and no polysemous training (on by default, and most of the training time).
        ivf.cp.niter = 10
        ivf.pq.cp.niter = 10
        ivf.do_polysemous_training = False
        rng = np.random.default_rng(seed)
        sample_size = min(count, max(min(train_size, 64 * nlist), 32 * nlist))
        sample = np.sort(rng.choice(count, size=sample_size, replace=False))
        _train(index, np.ascontiguousarray(embeddings.vectors[sample], dtype=np.float32), clustering)
    for start in range(0, count, 100_000):
        index.add(np.ascontiguousarray(embeddings.vectors[start : start + 100_000], dtype=np.float32))
    return index


def _train(index: "_faiss.Index", sample: np.ndarray, clustering: "_faiss.Index | None") -> None:
    """Train `index` on `sample`, its IVF lists' k-means assigning through `clustering` when one is given (FAISS's
    IndexIVF.clustering_index, the documented way to run an IVF's k-means on a GPU), then let it go: it is not
    part of the index saved."""
    ivf = faiss.extract_index_ivf(index)
    if clustering is not None:
        ivf.clustering_index = clustering
    try:
        index.train(sample)
    finally:
        ivf.clustering_index = None


def card_clustering(dim: int) -> "_faiss.Index | None":
    """A flat L2 index on every GPU FAISS sees (faiss-gpu), for an IVF's k-means; None where FAISS sees none
    (the CPU wheel, or no card): training then runs on the CPU, as always. k-means is most of a build's
    training (thousands of centroids over hundreds of thousands of points)."""
    if not hasattr(faiss, "StandardGpuResources") or faiss.get_num_gpus() == 0:
        return None
    on_cards: _faiss.Index = faiss.index_cpu_to_all_gpus(faiss.IndexFlatL2(dim))
    return on_cards


def _add(index: "_faiss.Index", embeddings: Embeddings, rows: np.ndarray, batch: int = 100_000) -> None:
    """Add the vectors of store `rows` under their image ids, in batches (float32 only a batch at a time)."""
    for start in range(0, len(rows), batch):
        chunk = rows[start : start + batch]
        vectors = np.ascontiguousarray(embeddings.vectors[chunk], dtype=np.float32)
        index.add_with_ids(vectors, np.ascontiguousarray(embeddings.image_ids[chunk], dtype=np.int64))


def list_labels(index: "_faiss.Index") -> Iterator[tuple[int, np.ndarray]]:
    """(list number, the labels it holds) for each non-empty list of an IVF index."""
    invlists = faiss.extract_index_ivf(index).invlists
    for number in range(invlists.nlist):
        if size := invlists.list_size(number):
            yield number, faiss.rev_swig_ptr(invlists.get_ids(number), size).copy()


def indexed_ids(index: "_faiss.Index") -> np.ndarray:
    """The image ids a fast-scan (IVF) index holds, sorted."""
    parts = [labels for _, labels in list_labels(index)]
    return np.sort(np.concatenate(parts)) if parts else np.empty(0, dtype=np.int64)


def update(index: "_faiss.Index", info: dict[str, Any], embeddings: Embeddings) -> tuple[int, int] | None:
    """Bring a trained fast-scan index up to date with the store in place: add the images it lacks and
    remove those the store no longer has. Returns (added, removed), or None when it must be rebuilt
    instead: another kind, other dimensions, or a collection grown past RETRAIN_GROWTH x what it was
    trained on. (An embedding job only embeds images without a vector, so a stored id's vector never
    changes under the index.)"""
    if info.get("kind") != "fastscan" or index.d != embeddings.vectors.shape[1]:
        return None
    if len(embeddings) > RETRAIN_GROWTH * info.get("trained_on", info.get("count", 0)):
        return None
    held = indexed_ids(index)
    missing = np.flatnonzero(~np.isin(embeddings.image_ids, held))
    gone = held[~np.isin(held, embeddings.image_ids)]
    if len(gone):
        index.remove_ids(faiss.IDSelectorBatch(gone))
    _add(index, embeddings, np.sort(missing))
    return len(missing), len(gone)


def _pq_subquantizers(dim: int) -> int:
    for m in (dim // 4, dim // 8, dim // 2, dim):
        if m and dim % m == 0 and m <= 256:
            return m
    return 1


def save(index: "_faiss.Index", folder: Path, *, kind: str, count: int, trained_on: int | None = None) -> Path:
    """Write the index and point `current.json` at it in one rename: readers swap on their next load.
    `trained_on`: how many vectors its quantizers were trained with (for `update`'s retraining rule)."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    generation = 1 + max((int(p.stem.split("-")[-1]) for p in folder.glob("index-*.faiss")), default=0)
    path = folder / f"index-{kind}-{generation}.faiss"
    faiss.write_index(index, str(path))
    pointer = {"file": path.name, "kind": kind, "count": count, "labels": labels_of(kind)}
    pointer["trained_on"] = count if trained_on is None else trained_on
    write_atomically(folder / "current.json", json.dumps(pointer))
    for old in folder.glob("index-*.faiss"):  # keep the previous one for readers still holding it
        if old.name != path.name and int(old.stem.split("-")[-1]) < generation - 1:
            old.unlink(missing_ok=True)
    return path


def load(folder: Path) -> tuple["_faiss.Index", dict[str, Any]]:
    pointer = Path(folder) / "current.json"
    if not pointer.exists():
        raise NoIndex("No search index has been built yet: run `manage.py build_index`.")
    info = json.loads(pointer.read_text())
    info.setdefault("labels", "rows")  # indexes saved before fast-scan
    # A flat index's float16 codes are memory-mapped, not read: web workers on one machine share one copy
    # in the page cache (clip-retrieval serves LAION-5B's flat shards so). FAISS reads the inverted lists
    # of IVF kinds into memory (32 bytes a vector for fast-scan: 160 MB at 5M; bench/RESULTS.md).
    flags = faiss.IO_FLAG_MMAP_IFC | faiss.IO_FLAG_READ_ONLY if info.get("kind") == "flat" else 0
    return faiss.read_index(str(Path(folder) / info["file"]), flags), info


def _refuse_mismatch(embeddings: Embeddings, index: "_faiss.Index", labels: str) -> None:
    """NoIndex when the index does not hold the store's vectors (their count or dimensions differ)."""
    if index.ntotal != len(embeddings):
        raise NoIndex(
            f"The search index holds {index.ntotal} vectors but the store {len(embeddings)}: "
            "run `manage.py build_index` again."
        )
    if index.d != embeddings.vectors.shape[1]:
        raise NoIndex(f"The index has {index.d} dimensions but the store {embeddings.vectors.shape[1]}.")
    if labels not in ("rows", "image_ids"):
        raise ValueError(f"index labels are rows or image_ids, not {labels!r}")


def _breadths(index: "_faiss.Index", labels: str, nprobe: int | None, rerank: int | None) -> tuple[Breadth, Breadth]:
    """An IVF index's narrow and wide breadths: the defaults, or the one fixed by `nprobe` or `rerank` for both."""
    default_narrow, default_wide = _default_breadths(index, labels)
    narrow = Breadth(nprobe or default_narrow.nprobe, rerank or default_narrow.rerank)
    return narrow, narrow if nprobe or rerank else default_wide


class Searcher:
    """An index with the store it was built from. Thread-safe for searching.

    Queries from the text side of CLIP's modality gap are out of the images' distribution, and an IVF
    index needs to read more of itself for them (Jaiswal et al., "OOD-DiskANN", 2022, measured the same
    for graph indexes): their relevant images score only a little above the rest, so they spread over
    more lists and deeper into the approximate ranking. The search cannot be told what a vector is (a
    researcher's own text encoder, an outside image), and telling texts apart by geometry fails (cosine with
    the images' mean direction, below the images' own 1st percentile: 16% of the realistic world's texts fell
    on the images' side), so each search reads the narrow `Breadth` and widens itself as its own results
    require (see CHECKED). A caller who knows the vector is a text says `wide=True`: the search then
    starts at the wide breadth, which saves a first reading and never lowers recall.
    """

    def __init__(
        self,
        embeddings: Embeddings,
        index: "_faiss.Index",
        *,
        nprobe: int | None = None,
        rerank: int | None = None,
        labels: str = "rows",
        adaptive: bool | None = None,
    ) -> None:
        """`nprobe` and `rerank` fix an IVF index's breadth (for benches and tests); otherwise the defaults
        are read and widened per search as its results require (`adaptive`, on unless a breadth is fixed)."""
        _refuse_mismatch(embeddings, index, labels)
        self.embeddings = embeddings
        self.index = index
        self.labels = labels
        self.exact = not isinstance(faiss.try_extract_index_ivf(index), faiss.IndexIVF)
        self._ivf: Any = None if self.exact else faiss.extract_index_ivf(index)  # read by every search that widens
        self._graph_quantizer = self._ivf is not None and hasattr(faiss.downcast_index(self._ivf.quantizer), "hnsw")
        # Rows of each taxon, found by binary search: a species filter costs microseconds, not a 5M-row scan.
        self._taxon_order = np.argsort(embeddings.taxon_ids, kind="stable")
        self._taxa_sorted = embeddings.taxon_ids[self._taxon_order]
        self.narrow, self.wide = (Breadth(0, 0),) * 2 if self.exact else _breadths(index, labels, nprobe, rerank)
        # Widening reads each result's list rank through the quantizer, which works in the vectors' own space:
        # not for the earlier PQ4 kind, whose lists are made after a PCA (kept for comparison only).
        self.adaptive = (
            not self.exact
            and not isinstance(index, faiss.IndexPreTransform)
            and (adaptive if adaptive is not None else not (nprobe or rerank))
        )
        self._lock = threading.Lock()
        self._id_order: np.ndarray | None = None  # argsort of the image ids, made on the first lookup by id
        self._list_of_row: np.ndarray | None = None  # each store row's IVF list, made on the first adaptive search

    @property
    def dim(self) -> int:
        return self.index.d

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
        """Rank images by inner product with `vector` (unit length, float32, shape (dim,)).

        Returns hits offset .. offset+k-1 of the ranking, best first; ties are
        broken by image id, so pages are stable. `taxon_ids` restricts to images
        of those taxa (ranked exactly); `exclude_image_ids` leaves images out. `wide`: the vector is
        not an image's (a text, a fitted vector): an approximate index reads more for it.
        """
        vector = np.asarray(vector, dtype=np.float32).reshape(-1)
        if vector.shape[0] != self.dim:
            raise ValueError(f"the query vector has {vector.shape[0]} dimensions, the index {self.dim}")
        if k <= 0 or offset < 0:
            return []
        excluded = np.asarray(sorted(set(exclude_image_ids or ())), dtype=np.int64)
        if taxon_ids is not None:
            return self._rank_exactly(vector, self.rows_of_taxa(taxon_ids), excluded, k, offset)
        wanted = offset + k
        if self.exact and wanted + len(excluded) >= len(self.embeddings) // 2:
            return self._rank_exactly(vector, np.arange(len(self.embeddings)), excluded, k, offset)
        return self._widening(vector, self.wide if wide else self.narrow, excluded, k, offset)

    def _widening(self, vector: np.ndarray, breadth: Breadth, excluded: np.ndarray, k: int, offset: int) -> list[Hit]:
        """The index's ranking from `breadth`, read again wider while its results show it was too narrow; ranked
        exactly once wider than the widest breadth (it cannot miss then)."""
        selector, wanted = self._leaving_out(excluded), offset + k
        while True:
            rows, estimates, filled = self._candidates(vector, breadth, wanted, selector)
            # FAISS's selector has left the excluded images out already: not looked up and filtered again.
            hits = self._rank_exactly(vector, rows, np.empty(0, dtype=np.int64), wanted, 0)
            wider = self._wider(vector, breadth, hits, rows, estimates, filled) if self.adaptive and hits else None
            if wider is None:
                return hits[offset:]
            if wider.nprobe > self.wide.nprobe or wider.rerank > self.wide.rerank:
                return self._rank_exactly(vector, np.arange(len(self.embeddings)), excluded, k, offset)
            breadth = wider

    def _leaving_out(self, excluded: np.ndarray) -> Any:
        """Excluded images (a query's labels: thousands, for a ranking that learns) are left out inside FAISS by an
        ID selector, so the candidates asked for and re-scored do not grow with them; None when there are none."""
        if not len(excluded):
            return None
        excluded_labels = excluded if self.labels == "image_ids" else self.rows_of_ids(excluded)
        return faiss.IDSelectorNot(faiss.IDSelectorBatch(excluded_labels))

    def _candidates(
        self, vector: np.ndarray, breadth: Breadth, wanted: int, selector: Any
    ) -> tuple[np.ndarray, np.ndarray, bool]:
        """The index's candidates at `breadth`: (store rows, the codes' estimated scores, whether the index
        gave as many as were asked for, so that more might lie beyond them)."""
        # Ask for a margin beyond the page: rows tied at the cut are then all seen and ordered by id. An exact
        # index's margin grows while it is all ties (a crowd of copies of one image): FAISS keeps whichever tied
        # rows it met first, and pages would otherwise skip or repeat copies.
        candidates = wanted + 16 if self.exact else max(breadth.rerank, 2 * wanted)
        candidates = min(candidates, len(self.embeddings))
        params = _search_parameters(self.exact, breadth, selector, graph=self._graph_quantizer)
        while True:
            # One search at a time per process: each already spreads over every core through FAISS's OpenMP
            # threads, and concurrent ones would only oversubscribe them.
            with self._lock:
                estimates, labels = self.index.search(vector[None, :], candidates, params=params)
            found = labels[0] >= 0
            labels, scores = labels[0][found], estimates[0][found]
            if not self.exact or len(labels) < candidates or candidates >= len(self.embeddings):
                break
            if scores.min() < np.partition(scores, len(scores) - wanted)[len(scores) - wanted]:
                break
            candidates = min(4 * candidates, len(self.embeddings))
        if self.labels == "image_ids":
            rows, known = self.locate(labels)
            labels, scores = rows[known], scores[known]
        return labels, scores, len(labels) >= candidates

    def _wider(
        self,
        vector: np.ndarray,
        breadth: Breadth,
        hits: list[Hit],
        rows: np.ndarray,
        estimates: np.ndarray,
        filled: bool,
    ) -> Breadth | None:
        """The breadth to read again at, when the results at `breadth` show it was too narrow for this vector,
        or None (the checks are explained above CHECKED)."""
        hits = hits[:CHECKED]
        best_rows = self.rows_of_ids(np.asarray([hit.image_id for hit in hits], dtype=np.int64))
        exact = np.asarray([hit.score for hit in hits], dtype=np.float32)
        order = np.argsort(rows)
        estimated = estimates[order][np.searchsorted(rows[order], best_rows)]
        errors = exact - estimated
        worst = float(exact.min())
        last = float(estimates.min()) if len(estimates) else worst
        more_candidates = filled and last + float(errors.mean()) + ESTIMATE_MARGIN * float(errors.std()) >= worst
        nlist = self._ivf.nlist
        more_lists = False
        if breadth.nprobe < nlist:
            probed = self._probed_lists(vector, breadth.nprobe)
            rank = np.full(nlist, breadth.nprobe, dtype=np.int64)
            rank[probed] = np.arange(len(probed))
            deep = int(np.count_nonzero(rank[self._lists_of_rows()[best_rows]] >= breadth.nprobe // 2))
            more_lists = deep > DEEP_ALLOWED
        if not (more_lists or more_candidates):
            return None
        return Breadth(
            min(nlist, max(2 * breadth.nprobe, self.wide.nprobe)) if more_lists else breadth.nprobe,
            max(2 * breadth.rerank, self.wide.rerank) if more_candidates else breadth.rerank,
        )

    def _probed_lists(self, vector: np.ndarray, nprobe: int) -> np.ndarray:
        """The lists a search of `nprobe` lists reads, best first: the quantizer's answer, as inside FAISS."""
        quantizer = self._ivf.quantizer
        params = faiss.SearchParametersHNSW(efSearch=max(2 * nprobe, 64)) if self._graph_quantizer else None
        _, lists = quantizer.search(vector[None, :], nprobe, params=params)
        probed: np.ndarray = lists[0][lists[0] >= 0]
        return probed

    def _lists_of_rows(self) -> np.ndarray:
        """The IVF list of each store row (int32), read from the index's inverted lists once."""
        if self._list_of_row is None:
            out = np.full(len(self.embeddings), -1, dtype=np.int32)
            for number, labels in list_labels(self.index):
                out[self.rows_of_ids(labels) if self.labels == "image_ids" else labels] = number
            self._list_of_row = out
        return self._list_of_row

    def locate(self, image_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """The store rows of `image_ids` (int64, in order), and which of them have a row at all."""
        if self._id_order is None:
            with self._lock:
                if self._id_order is None:
                    self._id_order = np.argsort(self.embeddings.image_ids, kind="stable")
        ids = self.embeddings.image_ids
        positions = np.minimum(np.searchsorted(ids, image_ids, sorter=self._id_order), len(ids) - 1)
        rows: np.ndarray = self._id_order[positions]
        return rows, ids[rows] == image_ids

    def rows_of_ids(self, image_ids: np.ndarray) -> np.ndarray:
        """The store rows of those of `image_ids` that are in it."""
        rows, found = self.locate(image_ids)
        present: np.ndarray = rows[found].astype(np.int64)
        return present

    def rows_of_taxa(self, taxon_ids: Iterable[int]) -> np.ndarray:
        wanted = np.unique(np.asarray(list(taxon_ids), dtype=np.int64))
        starts = np.searchsorted(self._taxa_sorted, wanted, side="left")
        ends = np.searchsorted(self._taxa_sorted, wanted, side="right")
        if not len(wanted):
            return np.empty(0, dtype=np.int64)
        return np.concatenate([self._taxon_order[a:b] for a, b in zip(starts, ends, strict=True)])

    def _top_of(
        self, vector: np.ndarray, rows: np.ndarray, excluded: np.ndarray, wanted: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """The `wanted` best of `rows` not excluded, with every row tied with the last of them (so that the
        order by score, then image id, is the same as scoring them all). Excluded rows stay in the scan
        (cutting them out would break a species' run into many) and the heap grows by their number."""
        excluded_rows = self.rows_of_ids(excluded) if len(excluded) else excluded
        inside = int(np.count_nonzero(np.isin(excluded_rows, rows))) if len(excluded_rows) else 0
        heap = wanted + inside + 16  # a margin: rows tied at the cut must all be seen
        while True:
            scores, found = top_rows(self.embeddings.vectors, rows, vector, min(heap, len(rows)))
            if inside:
                keep = ~np.isin(found, excluded_rows)
                scores, found = scores[keep], found[keep]
            if heap >= len(rows) or len(scores) <= wanted or np.sort(scores)[::-1][wanted - 1] > scores.min():
                return scores, found
            heap *= 4  # the scores tied at the cut fill the margin: look deeper

    def _scores(self, rows: np.ndarray, vector: np.ndarray) -> np.ndarray:
        """Exact scores of sorted `rows`. Runs of consecutive rows (a species in the taxon-ordered
        store) are read as slices of the memory map, without gathering them row by row."""
        breaks = np.flatnonzero(np.diff(rows) != 1) + 1
        if len(breaks) + 1 <= max(1, len(rows) // 64):
            starts = np.concatenate([[0], breaks])
            ends = np.concatenate([breaks, [len(rows)]])
            return np.concatenate(
                [
                    inner_products(self.embeddings.vectors[rows[a] : rows[b - 1] + 1], vector)
                    for a, b in zip(starts, ends, strict=True)
                ]
            )
        scores = np.empty(len(rows), dtype=np.float32)
        for start in range(0, len(rows), 200_000):
            block = rows[start : start + 200_000]
            scores[start : start + len(block)] = inner_products(self.embeddings.vectors[block], vector)
        return scores

    def _rank_exactly(
        self, vector: np.ndarray, rows: np.ndarray, excluded: np.ndarray, k: int, offset: int
    ) -> list[Hit]:
        if len(rows) > 1 and not np.all(rows[1:] > rows[:-1]):  # a species' rows come sorted already
            # Sorted positions read the memmap in order. (np.unique hashes: 0.5 ms at 5,000 rows; this, 0.05.)
            rows = np.sort(rows)
            rows = rows[np.concatenate([[True], rows[1:] != rows[:-1]])]
        if len(rows) >= 256 and offset + k < len(rows) // 4:  # a species, or an index's 1,000 candidates
            scores, rows = self._top_of(vector, rows, excluded, offset + k)
        else:
            if len(excluded):
                rows = rows[~np.isin(self.embeddings.image_ids[rows], excluded)]
            if len(rows) == 0:
                return []
            scores = self._scores(rows, vector)
        ids = self.embeddings.image_ids[rows]
        order = np.lexsort((ids, -scores))[offset : offset + k]
        taxa = self.embeddings.taxon_ids[rows]
        return [Hit(int(ids[i]), float(scores[i]), int(taxa[i])) for i in order]
