"""A 2-D map of one model's embeddings: where every image of the collection sits, for the map and its lasso.

How the map is made (measured in bench/map_layout_bench.py, figures in bench/RESULTS.md):
  1. PCA to PCA_DIMS dimensions, fitted on a random sample (numpy's SVD): t-SNE's neighbours are found in it,
     and every image is placed from it.
  2. openTSNE (Poličar, Stražar and Zupan, "openTSNE", JMLR 2024; FFT-accelerated t-SNE after Linderman et al.)
     on a random sample of at most QUIRE_MAP_SAMPLE images. Chosen over umap-learn and PaCMAP on the same
     sample: it kept the most of each image's 10 nearest neighbours, needs no JIT compilation (numba's costs the
     first layout of every process 10 to 30 s), and its time does not depend on the collection's size.
  3. Every other image is placed at the similarity-weighted mean of its PLACE_NEIGHBOURS nearest sample images
     (cosine, in the PCA space, found with FAISS): t-SNE's own transform optimises each new point and costs
     minutes per 100,000; this is linear in the collection and seconds per 100,000. New images (an embedding
     job) are placed the same way, without refitting: the map others have seen does not move.

Stored beside the embeddings, per model (QUIRE_DATA_DIR/maps/<model>/):
  fit.npz         the PCA, the sample's ids, PCA rows and 2-D positions (what placing a new image needs)
  part-*.npz      images placed so far by a running layout (a crash resumes from them)
  layout.npz      every placed image: ids (sorted), x, y (float32) and its region (the map's clusters, for the
                  page's hints); replaced atomically
  next/           a refit at work: its own fit, parts and layout, swapped in (`_switch`) once whole; the map in
                  use serves every route meanwhile
"""

import os
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from threading import Lock

import numpy as np
from django.conf import settings

from .exceptions import NoMap
from .spec import model_slug
from .store import Embeddings, EmbeddingStore

PCA_DIMS = 50
PLACE_NEIGHBOURS = 10
PLACE_CHUNK = 50_000
# Weights exp(similarity / SHARPNESS): the nearest sample image counts most, a far one hardly at all, so an
# image between two clusters is not dragged to the empty middle by its tenth neighbour.
SHARPNESS = 0.05
# The map's regions (regions_of): about this many images each, at most MAX_REGIONS.
REGION_SIZE = 500
MAX_REGIONS = 4000
# Map coordinates are scaled into [-MAP_EXTENT, MAP_EXTENT] on the longer axis: the page and the API speak them.
MAP_EXTENT = 100.0

Progress = Callable[[int, int], None]  # (images placed, of how many)


@dataclass(frozen=True)
class Layout:
    image_ids: np.ndarray  # int64 (N,), sorted
    xy: np.ndarray  # float32 (N, 2)
    version: str  # changes whenever layout.npz is replaced (the page's cache key)
    regions: np.ndarray | None = None  # int32 (N,): the map's clusters as a person sees them (k-means on x, y)

    def __len__(self) -> int:
        return len(self.image_ids)

    def positions(self, image_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(found, xy): which of `image_ids` are on the map, and their positions (rows for the found ones)."""
        ids = np.asarray(image_ids, dtype=np.int64)
        where = np.searchsorted(self.image_ids, ids)
        where = np.minimum(where, max(len(self.image_ids) - 1, 0))
        found = (self.image_ids[where] == ids) if len(self.image_ids) else np.zeros(len(ids), bool)
        return found, self.xy[where[found]]


def folder(model_name: str) -> Path:
    return Path(settings.QUIRE_DATA_DIR) / "maps" / model_slug(model_name)


def _save(path: Path, **arrays: np.ndarray) -> None:
    """Write an .npz atomically: a reader (or a crash) never sees half of one."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    with open(temporary, "wb") as out:
        np.savez(out, **arrays)  # type: ignore[arg-type]  # numpy's stub types the first keyword as allow_pickle
    os.replace(temporary, path)


_cache: dict[str, tuple[float, Layout]] = {}
_cache_lock = Lock()


def load(model_name: str) -> Layout:
    """The stored layout of `model_name` (read once per process and again when the file is replaced)."""
    path = folder(model_name) / "layout.npz"
    try:
        stamp = path.stat().st_mtime_ns
    except FileNotFoundError:
        raise NoMap(
            "No map of the collection yet: compute it with `manage.py map_layout` "
            "(or the admin's Map layouts › Compute the map)."
        ) from None
    with _cache_lock:
        cached = _cache.get(model_name)
        if cached and cached[0] == stamp:
            return cached[1]
        with np.load(path) as stored:
            regions = stored["regions"] if "regions" in stored.files else None
            layout = Layout(stored["image_ids"], stored["xy"], version=f"{stamp:x}", regions=regions)
        _cache[model_name] = (stamp, layout)
        return layout


@dataclass(frozen=True)
class Fit:
    mean: np.ndarray  # float32 (dim,)
    components: np.ndarray  # float32 (PCA_DIMS, dim)
    sample_ids: np.ndarray  # int64 (S,)
    sample_rows: np.ndarray  # float32 (S, PCA_DIMS), unit rows
    sample_xy: np.ndarray  # float32 (S, 2)

    def project(self, vectors: np.ndarray) -> np.ndarray:
        """Unit rows in the PCA space (cosine there is what placing compares)."""
        rows = (np.asarray(vectors, dtype=np.float32) - self.mean) @ self.components.T
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        unit: np.ndarray = rows / np.maximum(norms, 1e-12)
        return unit


def fit(vectors: np.ndarray, image_ids: np.ndarray, *, sample: int, seed: int = 0) -> Fit:
    """PCA and t-SNE on a random sample of at most `sample` rows."""
    from openTSNE import TSNE  # openTSNE loads only where a map is computed

    rng = np.random.default_rng(seed)
    count = len(image_ids)
    rows = np.sort(rng.choice(count, size=min(sample, count), replace=False))
    chosen = np.asarray(vectors[rows], dtype=np.float32)
    mean = chosen.mean(axis=0)
    dims = min(PCA_DIMS, chosen.shape[1], max(len(rows) - 1, 1))
    _, _, vt = np.linalg.svd(chosen - mean, full_matrices=False)
    partial = Fit(mean, vt[:dims].astype(np.float32), image_ids[rows].astype(np.int64), np.empty(0), np.empty(0))
    projected = partial.project(chosen)
    # perplexity 30 (openTSNE's default) needs 90 neighbours; a small collection gets what it has.
    perplexity = float(min(30.0, max(2.0, (len(rows) - 1) / 3.5)))
    embedding = TSNE(
        perplexity=perplexity, metric="cosine", n_jobs=os.cpu_count() or 1, random_state=seed, verbose=False
    ).fit(projected)
    xy = _scaled(np.asarray(embedding, dtype=np.float32))
    return Fit(partial.mean, partial.components, partial.sample_ids, projected, xy)


def _scaled(xy: np.ndarray) -> np.ndarray:
    """Centred, the longer axis spanning [-MAP_EXTENT, MAP_EXTENT]: stable numbers for URLs and the API."""
    centre = (xy.max(axis=0) + xy.min(axis=0)) / 2
    half = float(np.max(xy.max(axis=0) - xy.min(axis=0))) / 2 or 1.0
    scaled: np.ndarray = ((xy - centre) * (MAP_EXTENT / half)).astype(np.float32)
    return scaled


def regions_of(xy: np.ndarray) -> np.ndarray:
    """The map's clusters as a person would outline them: k-means on the 2-D positions, about REGION_SIZE
    images each (what the page's cluster hints count labels in). Seconds at 1M (scikit-learn's mini-batch
    k-means)."""
    from sklearn.cluster import MiniBatchKMeans  # scikit-learn loads only where a map is made

    k = int(min(MAX_REGIONS, max(1, len(xy) // REGION_SIZE)))
    if k == 1 or len(xy) < 2:
        return np.zeros(len(xy), dtype=np.int32)
    found: np.ndarray = MiniBatchKMeans(n_clusters=k, random_state=0, n_init=1, batch_size=8192).fit_predict(xy)
    return found.astype(np.int32)


def place(fitted: Fit, vectors: np.ndarray) -> np.ndarray:
    """2-D positions of `vectors`: the similarity-weighted mean of their nearest sample images' positions."""
    import faiss  # FAISS loads only where images are placed

    rows = fitted.project(vectors)
    index = faiss.IndexFlatIP(fitted.sample_rows.shape[1])
    index.add(np.ascontiguousarray(fitted.sample_rows))
    k = min(PLACE_NEIGHBOURS, len(fitted.sample_rows))
    similarity, neighbours = index.search(np.ascontiguousarray(rows), k)
    weights = np.exp((similarity - similarity[:, :1]) / SHARPNESS)
    weights /= weights.sum(axis=1, keepdims=True)
    placed: np.ndarray = np.einsum("nk,nkd->nd", weights, fitted.sample_xy[neighbours]).astype(np.float32)
    return placed


def _read_fit(path: Path) -> Fit:
    with np.load(path) as stored:
        return Fit(*(stored[name] for name in ("mean", "components", "sample_ids", "sample_rows", "sample_xy")))


@dataclass(frozen=True)
class Outcome:
    mode: str  # "fitted" (a new map) or "updated" (new images placed on the existing one)
    placed: int  # images placed by this run
    points: int  # images on the map
    removed: int  # images gone from the store since the last layout


def compute(
    model_name: str,
    *,
    refit: bool = False,
    progress: Progress | None = None,
    fitted_now: Callable[[], None] | None = None,
) -> Outcome:
    """Compute or update the map of `model_name`'s embeddings. Resumable: a run stopped half-way (a killed
    worker) finds its placed chunks on disk and goes on from them; `fitted_now` is told once a new fit is
    saved (a job asked to refit then resumes instead of fitting again). FileNotFoundError without embeddings."""
    from . import spec  # the store's root is a setting, read at call time

    embeddings = EmbeddingStore.existing(spec.store_root(), model_name).load()
    if len(embeddings) == 0:
        raise FileNotFoundError(f"No embeddings for {model_name} yet: run `manage.py embed` first.")
    here = folder(model_name)
    here.mkdir(parents=True, exist_ok=True)
    # A refit works in here/next/ and replaces the map in use only once the new one is saved: every map route and
    # lasso keeps reading the old layout.npz meanwhile. next/ existing means a refit is under way (or was cut short:
    # it resumes from what next/ holds).
    work = here / NEXT if refit or (here / NEXT).exists() else here
    work.mkdir(exist_ok=True)
    if work != here and (work / "layout.npz").exists():  # cut short while switching: finish the switch
        return _switch(here, work, Outcome("fitted", 0, len(load_from(work / "layout.npz")), 0))
    # Whatever is computed in next/ is a new map, even where a refit resumes from a fit its killed worker saved but
    # did not get to record (fitted_now): it was seen reported as "updated" when the kill fell between the two.
    mode = "fitted" if work != here else "updated"
    if not (work / "fit.npz").exists():
        _fit_anew(work, embeddings, fitted_now)
        mode = "fitted"
    fitted = _read_fit(work / "fit.npz")
    placed_ids, placed_xy = _placed_so_far(work)
    done_ids = np.concatenate(placed_ids)
    store_ids = embeddings.image_ids
    todo_rows = np.flatnonzero(~np.isin(store_ids, done_ids))
    # The sample keeps its fitted positions; only the others are placed.
    sample_found = np.isin(fitted.sample_ids, store_ids) & ~np.isin(fitted.sample_ids, done_ids)
    if sample_found.any():
        _save(work / "part-sample.npz", image_ids=fitted.sample_ids[sample_found], xy=fitted.sample_xy[sample_found])
        placed_ids.append(fitted.sample_ids[sample_found])
        placed_xy.append(fitted.sample_xy[sample_found])
        todo_rows = todo_rows[~np.isin(store_ids[todo_rows], fitted.sample_ids)]
    total = len(todo_rows)
    _place_in_chunks(work, fitted, embeddings, todo_rows, (placed_ids, placed_xy), progress)
    ids, xy, removed = _merged(np.concatenate(placed_ids), np.concatenate(placed_xy), store_ids)
    _save(work / "layout.npz", image_ids=ids, xy=xy, regions=regions_of(xy))
    for part in work.glob("part-*.npz"):
        part.unlink()
    outcome = Outcome(mode, total + int(sample_found.sum()), len(ids), removed)
    return outcome if work == here else _switch(here, work, outcome)


def _fit_anew(work: Path, embeddings: Embeddings, fitted_now: Callable[[], None] | None) -> None:
    """A new fit saved in `work`, any other fit's positions removed first (they do not mix in)."""
    for stale in [work / "layout.npz", *work.glob("part-*.npz")]:
        stale.unlink(missing_ok=True)
    fitted = fit(embeddings.vectors, embeddings.image_ids, sample=settings.QUIRE_MAP_SAMPLE)
    _save(work / "fit.npz", **fitted.__dict__)
    if fitted_now:
        fitted_now()


def _place_in_chunks(
    work: Path, fitted: Fit, embeddings: Embeddings, todo_rows: np.ndarray,
    placed: tuple[list[np.ndarray], list[np.ndarray]], progress: Progress | None,
) -> None:  # fmt: skip
    """Place the store's rows `todo_rows` a chunk at a time, each chunk saved as a part (so that a run cut short
    resumes from it) and appended to `placed` (ids, positions)."""
    total = len(todo_rows)
    for start in range(0, total, PLACE_CHUNK):
        rows = todo_rows[start : start + PLACE_CHUNK]
        xy = place(fitted, embeddings.vectors[rows])
        ids = embeddings.image_ids[rows].astype(np.int64)
        _save(work / f"part-{time.time_ns():020d}.npz", image_ids=ids, xy=xy)
        placed[0].append(ids)
        placed[1].append(xy)
        if progress:
            progress(min(start + PLACE_CHUNK, total), total)


NEXT = "next"  # the folder a refit works in until its map replaces the one in use


def load_from(path: Path) -> np.ndarray:
    with np.load(path) as stored:
        ids: np.ndarray = stored["image_ids"]
        return ids


def _switch(here: Path, work: Path, outcome: Outcome) -> Outcome:
    """The refit's map into use: its fit, then its layout (what readers read), each replaced in one step; then the
    old map's leftovers and the work folder go. Repeatable: a switch cut short is finished by the next run."""
    if (work / "fit.npz").exists():
        os.replace(work / "fit.npz", here / "fit.npz")
    os.replace(work / "layout.npz", here / "layout.npz")
    for stale in here.glob("part-*.npz"):  # an update of the old fit cut short: its positions are the old map's
        stale.unlink()
    shutil.rmtree(work, ignore_errors=True)
    return outcome


def _placed_so_far(here: Path) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """(ids, positions) already placed: the last layout's, then the chunks of a run that stopped half-way."""
    placed_ids, placed_xy = [np.empty(0, np.int64)], [np.empty((0, 2), np.float32)]
    for path in [here / "layout.npz", *sorted(here.glob("part-*.npz"))]:
        if path.exists():
            with np.load(path) as stored:
                placed_ids.append(stored["image_ids"])
                placed_xy.append(stored["xy"])
    return placed_ids, placed_xy


def _merged(ids: np.ndarray, xy: np.ndarray, store_ids: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The map's points sorted by id, each once (its first position: a point never moves), images gone from the
    store left out; and how many were left out."""
    keep = np.isin(ids, store_ids)
    ids, xy = ids[keep], xy[keep]
    order = np.argsort(ids, kind="stable")
    ids, xy = ids[order], xy[order]
    unique = np.ones(len(ids), bool)
    unique[1:] = ids[1:] != ids[:-1]
    return ids[unique], xy[unique], int((~keep).sum())
