"""Importing precomputed embeddings in the clip-retrieval layout (how INQUIRE ships iNat24's):

  DIR/img_emb/img_emb_0.npy          N x D vectors (float16 or float32)
  DIR/metadata/metadata_0.parquet    N rows; the `image_path` column names each row's image

Files are paired by their number. Paths are matched to the collection's
`file_name`s after dropping the leading folders they do not share (the
machine that embedded them had another images root). Everything is checked
before anything is written, so a bad directory leaves the store as it was.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq

from catalog.models import Image
from common.inputs import InputError

from .exceptions import StoreMismatch
from .store import NO_TAXON, EmbeddingStore


@dataclass
class EmbeddingsImported:
    files: int
    vectors: int
    dim: int

    def __str__(self) -> str:
        return f"{self.vectors:,} vectors of {self.dim} dimensions from {self.files} file(s)"


def _numbered(folder: Path, pattern: str, where: Path) -> dict[int, Path]:
    found = {}
    for path in folder.glob(pattern):
        number = re.search(r"(\d+)\.[a-z]+$", path.name)
        if number:
            found[int(number.group(1))] = path
    if not found:
        raise InputError(
            where, None, f"no {folder.name}/{pattern} files: expected the clip-retrieval layout (img_emb/, metadata/)"
        )
    return found


def import_clip_retrieval(
    folder: Path, root: Path, model_name: str, *, progress: Callable[[int, int], None] | None = None
) -> EmbeddingsImported:
    """Import the vectors of `folder` (clip-retrieval layout) into the store of `model_name` under `root`.

    Row i of img_emb_N.npy is the image named by row i of metadata_N.parquet's `image_path`,
    matched to the collection's file names. Vectors (float16 or float32, any scale) are stored
    L2-normalised as float16. `progress(done, total)` is called in vectors after each file.
    Returns the files, vectors and dimension imported. Everything is checked before anything is
    written: InputError (file, row, problem) leaves the store as it was.
    """
    folder = Path(folder)
    if not folder.is_dir():
        raise InputError(folder, None, "not a folder")
    plan, dim = _check(folder)
    try:
        store = EmbeddingStore(root, model_name, dim)
    except StoreMismatch as error:
        raise InputError(folder, None, str(error)) from None
    _write(store, plan, progress)
    return EmbeddingsImported(files=len(plan), vectors=sum(len(ids) for _, ids, _ in plan), dim=dim)


def _paired_files(folder: Path) -> list[tuple[Path, Path]]:
    """(img_emb_N.npy, metadata_N.parquet) for each N, in order of N."""
    vectors_files = _numbered(folder / "img_emb", "img_emb_*.npy", folder)
    metadata_files = _numbered(folder / "metadata", "metadata_*.parquet", folder)
    if set(vectors_files) != set(metadata_files):
        raise InputError(
            folder,
            None,
            f"img_emb files {sorted(vectors_files)} and metadata files {sorted(metadata_files)} are not numbered alike",
        )
    return [(vectors_files[number], metadata_files[number]) for number in sorted(vectors_files)]


def _check(folder: Path) -> tuple[list[tuple[Path, np.ndarray, np.ndarray]], int]:
    """Pass 1: read and check every file and map every path to an image, writing nothing.
    Returns the plan, (vectors file, image ids, taxon ids) per file, and the dimension."""
    plan = []
    dim = None
    prefix = None
    for vectors_path, metadata_path in _paired_files(folder):
        vectors = _vectors(vectors_path, dim)
        dim = vectors.shape[1]
        paths = _image_paths(metadata_path)
        if len(paths) != len(vectors):
            raise InputError(
                metadata_path, None, f"{len(paths)} rows, but {vectors_path.name} has {len(vectors)} vectors"
            )
        if prefix is None and paths:
            prefix = _shared_prefix(paths[0], metadata_path)
        image_ids, taxon_ids = _match(paths, prefix or "", metadata_path)
        plan.append((vectors_path, image_ids, taxon_ids))
    if dim is None:  # _numbered found at least one pair, so the loop ran
        raise InputError(folder, None, "no vectors")
    return plan, dim


def _vectors(path: Path, dim: int | None) -> np.ndarray:
    """A file's vectors, memory-mapped, checked to be a 2-D float array of `dim` columns (when known)."""
    try:
        vectors: np.ndarray = np.load(path, mmap_mode="r", allow_pickle=False)
    except (OSError, ValueError) as error:
        raise InputError(path, None, f"not a .npy array: {error}") from None
    if vectors.ndim != 2 or vectors.dtype.kind != "f":
        raise InputError(path, None, f"expected a 2-D float array, found {vectors.ndim}-D {vectors.dtype}")
    if dim is not None and vectors.shape[1] != dim:
        raise InputError(path, None, f"{vectors.shape[1]} dimensions, but the files before have {dim}")
    return vectors


def _image_paths(path: Path) -> list[str]:
    """A metadata file's image_path column, every row a non-empty text."""
    try:
        table = pq.read_table(path, columns=["image_path"])
    except Exception as error:  # pyarrow raises ArrowInvalid, KeyError...: all mean "not the expected parquet"
        raise InputError(path, None, f"cannot read an image_path column: {str(error).splitlines()[0]}") from None
    paths: list[str] = table.column("image_path").to_pylist()
    if bad := next((row for row, value in enumerate(paths, start=1) if not isinstance(value, str) or not value), None):
        raise InputError(path, f"row {bad}", f"image_path must be a file path (text), not {paths[bad - 1]!r}")
    return paths


def _write(
    store: EmbeddingStore,
    plan: list[tuple[Path, np.ndarray, np.ndarray]],
    progress: Callable[[int, int], None] | None,
) -> None:
    """Pass 2: one part per file, then folded into the store; a failure leaves no part behind."""
    total = sum(len(ids) for _, ids, _ in plan)
    written, parts = 0, []
    try:
        for vectors_path, image_ids, taxon_ids in plan:
            vectors = np.load(vectors_path, mmap_mode="r").astype(np.float32)
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            if not np.all(np.isfinite(norms)) or np.any(norms == 0):
                raise InputError(vectors_path, None, "some vectors are zero, infinite or NaN")
            parts.append(store.write_part(f"import-{vectors_path.stem}", image_ids, taxon_ids, vectors / norms))
            written += len(image_ids)
            if progress:
                progress(written, total)
    except BaseException:
        for part in parts:  # nothing of a failed import reaches the store
            part.unlink(missing_ok=True)
        raise
    store.consolidate()


def _shared_prefix(path: str, where: Path) -> str:
    """The leading folders of `path` that the collection's file_name does not have."""
    parts = Path(path).parts
    for start in range(len(parts)):
        candidate = str(Path(*parts[start:]))
        if Image.objects.filter(file_name=candidate).exists():
            return path[: len(path) - len(candidate)]
    raise InputError(
        where, "row 1", f"image_path {path!r} matches no image of the collection: import the collection first"
    )


def _match(paths: list[str], prefix: str, where: Path) -> tuple[np.ndarray, np.ndarray]:
    names = [path[len(prefix) :] if path.startswith(prefix) else path for path in paths]
    found: dict[str, tuple[int, int]] = {}
    for start in range(0, len(names), 10_000):
        rows = Image.objects.filter(file_name__in=names[start : start + 10_000]).values_list(
            "file_name", "id", "taxon_id"
        )
        found.update((name, (image_id, taxon_id)) for name, image_id, taxon_id in rows)
    missing = [
        (row, path) for row, (path, name) in enumerate(zip(paths, names, strict=True), start=1) if name not in found
    ]
    if missing:
        row, path = missing[0]
        raise InputError(
            where, f"row {row}", f"image_path {path!r} matches no image of the collection ({len(missing)} such rows)"
        )
    image_ids = np.fromiter((found[name][0] for name in names), dtype=np.int64, count=len(names))
    taxon_ids = np.fromiter(
        (NO_TAXON if found[name][1] is None else found[name][1] for name in names), dtype=np.int64, count=len(names)
    )
    if len(np.unique(image_ids)) != len(image_ids):
        raise InputError(where, None, "the same image appears twice")
    return image_ids, taxon_ids
