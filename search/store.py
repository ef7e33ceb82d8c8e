"""The embedding store: one float16 matrix per model, memory-mapped, with the aligned image and taxon ids.

Layout under QUIRE_DATA_DIR/embeddings/<model slug>/:
  meta.json        {"model": ..., "dim": ...}: vectors of another model are never mixed in
  vectors.npy      float16, N x dim, rows of unit length (memory-mapped when read),
                   ordered by taxon then image id (a species' rows are one contiguous block)
  image_ids.npy    int64, N: the image id of each row
  taxon_ids.npy    int64, N: the taxon id of each row, -1 for none (species filters use it
                   without asking the database for millions of ids)
  parts/*.npz      rows written by embedding workers, one file per chunk, each written
                   atomically; consolidate() folds them into the three arrays.

Many workers on many machines can write parts at once (they share only the
folder); consolidation happens once, at the end of a job.
"""

import io
import json
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from common.files import atomic_path, write_atomically

from .exceptions import StoreMismatch
from .spec import model_slug

NO_TAXON = -1


@dataclass
class Embeddings:
    """What a search needs: row i is image image_ids[i] of taxon taxon_ids[i]."""

    vectors: np.ndarray  # float16 (N, dim), usually a read-only memmap
    image_ids: np.ndarray  # int64 (N,)
    taxon_ids: np.ndarray  # int64 (N,)

    def __len__(self) -> int:
        return len(self.image_ids)


class EmbeddingStore:
    def __init__(self, root: Path, model_name: str, dim: int) -> None:
        """Open (creating if needed) the store of `model_name` under `root`; fail if it holds another model."""
        self.directory = Path(root) / model_slug(model_name)
        self.model_name = model_name
        self.dim = dim
        meta_path = self.directory / "meta.json"
        (self.directory / "parts").mkdir(parents=True, exist_ok=True)
        if meta_path.exists():
            meta = json.loads(meta_path.read_text())
            if meta["model"] != model_name or meta["dim"] != dim:
                raise StoreMismatch(
                    f"The embeddings in {self.directory} are from {meta['model']} ({meta['dim']} dimensions), "
                    f"not the configured {model_name} ({dim} dimensions). Configure that model again, "
                    "or embed the collection with the new one."
                )
        else:
            write_atomically(meta_path, json.dumps({"model": model_name, "dim": dim}))

    @classmethod
    def existing(cls, root: Path, model_name: str) -> "EmbeddingStore":
        """Open a store that must already exist."""
        meta_path = Path(root) / model_slug(model_name) / "meta.json"
        if not meta_path.exists():
            raise FileNotFoundError(f"No embeddings for {model_name} yet: run `manage.py embed` first.")
        return cls(root, model_name, json.loads(meta_path.read_text())["dim"])

    # Writing

    def write_part(self, name: str, image_ids: np.ndarray, taxon_ids: np.ndarray, vectors: np.ndarray) -> Path:
        """Store one chunk's rows. Writing the same part again replaces it (a retried chunk)."""
        vectors = np.asarray(vectors)
        if vectors.ndim != 2 or vectors.shape[1] != self.dim or len(vectors) != len(image_ids):
            raise ValueError(f"expected {len(image_ids)} x {self.dim} vectors, got {vectors.shape}")
        path = self.directory / "parts" / f"{model_slug(name)}.npz"
        with atomic_path(path) as temporary, temporary.open("wb") as handle:
            np.savez(
                handle,
                image_ids=np.asarray(image_ids, dtype=np.int64),
                taxon_ids=np.asarray(taxon_ids, dtype=np.int64),
                vectors=vectors.astype(np.float16),
            )
        return path

    def parts(self) -> list[Path]:
        return sorted((self.directory / "parts").glob("*.npz"))

    def consolidate(self, batch_rows: int = 100_000) -> int:
        """Fold the parts into the arrays (a re-embedded image keeps its newest vector); return the row count.

        Writes new files beside the old ones and renames them into place, so a
        reader sees either the old store or the new one, never half of it.
        """
        parts = self.parts()
        if not parts:
            return len(self.image_ids())
        sources = []  # (image_ids, taxon_ids, vectors) in order: consolidated rows first, then parts
        if (self.directory / "image_ids.npy").exists():
            current = self.load()
            sources.append((current.image_ids, current.taxon_ids, current.vectors))
        for part in parts:
            with np.load(part) as data:
                sources.append((data["image_ids"], data["taxon_ids"], data["vectors"]))
        all_ids = np.concatenate([ids for ids, _, _ in sources])
        all_taxa = np.concatenate([taxa for _, taxa, _ in sources])
        # The last occurrence of an id wins: reverse, take the first of each unique id.
        _, first = np.unique(all_ids[::-1], return_index=True)
        keep = len(all_ids) - 1 - first
        # Rows ordered by taxon, then image id: a species filter then reads one contiguous block.
        keep = keep[np.lexsort((all_ids[keep], all_taxa[keep]))]
        total = len(keep)
        destination = np.full(len(all_ids), -1, dtype=np.int64)
        destination[keep] = np.arange(total)
        tag = f".{os.getpid()}.tmp"
        vectors_tmp = self.directory / f"vectors.npy{tag}"
        out = np.lib.format.open_memmap(vectors_tmp, mode="w+", dtype=np.float16, shape=(total, self.dim))
        offsets = np.cumsum([0] + [len(ids) for ids, _, _ in sources])
        for (ids, _, vectors), start in zip(sources, offsets[:-1], strict=True):
            rows = np.flatnonzero(destination[start : start + len(ids)] >= 0)
            for begin in range(0, len(rows), batch_rows):
                chunk = rows[begin : begin + batch_rows]
                out[destination[start + chunk]] = vectors[chunk]
        out.flush()
        del out
        (self.directory / f"image_ids.npy{tag}").write_bytes(_npy_bytes(all_ids[keep]))
        (self.directory / f"taxon_ids.npy{tag}").write_bytes(_npy_bytes(all_taxa[keep]))
        # ids and taxa first, vectors last: load() checks that the lengths agree.
        for name in ("image_ids.npy", "taxon_ids.npy", "vectors.npy"):
            (self.directory / f"{name}{tag}").replace(self.directory / name)
        for part in parts:
            part.unlink()
        return total

    # Reading

    def image_ids(self) -> np.ndarray:
        path = self.directory / "image_ids.npy"
        return np.load(path) if path.exists() else np.empty(0, dtype=np.int64)

    def embedded_image_ids(self) -> np.ndarray:
        """Ids with a vector, consolidated or in a part (what an embedding job skips)."""
        ids = [self.image_ids()]
        for part in self.parts():
            with np.load(part) as data:
                ids.append(data["image_ids"])
        return np.unique(np.concatenate(ids))

    def load(self) -> Embeddings:
        if not (self.directory / "vectors.npy").exists():
            return Embeddings(np.empty((0, self.dim), np.float16), np.empty(0, np.int64), np.empty(0, np.int64))
        vectors = np.load(self.directory / "vectors.npy", mmap_mode="r")
        image_ids = np.load(self.directory / "image_ids.npy")
        taxon_ids = np.load(self.directory / "taxon_ids.npy")
        if not (len(vectors) == len(image_ids) == len(taxon_ids)):
            raise StoreMismatch(f"{self.directory} is inconsistent; run `manage.py embed` again to rebuild it.")
        return Embeddings(vectors, image_ids, taxon_ids)


# A store up to this share of the machine's memory is read into the page cache when a worker warms up.
WARM_SHARE = 0.5


def warm(vectors: np.ndarray, *, memory: int | None = None, chunk: int = 64 << 20) -> tuple[int, str]:
    """Read a memory-mapped store's file once, start to end, so that its pages are in the page cache.

    After a restart the pages are not there, and exact re-scoring reads each candidate's row at a page fault,
    one at a time: at 5M x 1024 the first text search (10,000 candidates) took 13 s and image searches up to
    3.8 s, where read sequentially the whole 10.2 GB took 10.7 s (bench/RESULTS.md). Returns (bytes read,
    a sentence); skips a store larger than WARM_SHARE of `memory` (default: this machine's), which the
    cache could not keep anyway."""
    path = getattr(vectors, "filename", None)
    if path is None:
        return 0, "the store is in memory already"
    size = os.path.getsize(path)
    memory = memory or os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    if size > WARM_SHARE * memory:
        return 0, f"the store ({size / 1e9:.1f} GB) is more than half this machine's memory: not read ahead"
    done = 0
    with open(path, "rb", buffering=0) as file:
        while block := file.read(chunk):
            done += len(block)
    return done, f"the store's {size / 1e9:.1f} GB read into the page cache"


def _npy_bytes(array: np.ndarray) -> bytes:
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()
