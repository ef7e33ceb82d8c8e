"""Images on disk to vectors: decoding in loader threads or processes while the model runs.

Threads by default: Celery's prefork workers are daemon processes, which may not start children, and Pillow
releases the GIL while it decodes and resizes, as torch does during the forward pass. A bounded look-ahead keeps
the next batches decoding while the current one is in the model, so the model, not the decoding, sets the pace
on a CPU. On a GPU it does not: at 224 px the threads of one interpreter reached 597 images/s on an H100's
16-core host against ViT-H-14's 1,102 (bench/RESULTS.md; 16 threads were slower than 8, contending for the
interpreter in the preprocessing transforms). `loader_processes` decodes in that many processes instead (torch's
DataLoader, each batch stacked in its process and passed in shared memory), where the task's process may have
children: a worker run with `--pool threads` or `--pool solo` (docker/compose.gpu.yml), or `manage.py embed`.

A missing or unreadable image never stops the work: it comes back as a Failure.
"""

import logging
import multiprocessing
from collections import deque
from collections.abc import Callable, Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
from PIL import Image as PILImage

from common.formats import RASTER_TYPES

from .clip import ClipEmbedder

logger = logging.getLogger(__name__)

# The formats Quire serves and embeds: never one Pillow would hand to an outside decoder (EPS: Ghostscript).
RASTER_FORMATS = list(RASTER_TYPES)


@dataclass(frozen=True)
class ImageFile:
    image_id: int
    path: Path
    taxon_id: int


@dataclass(frozen=True)
class Failure:
    image_id: int
    reason: str


@dataclass
class Embedded:
    image_ids: np.ndarray
    taxon_ids: np.ndarray
    vectors: np.ndarray  # float32 (n, dim), unit rows
    failures: list[Failure]


def decode(
    image: ImageFile, preprocess: Callable[[PILImage.Image], torch.Tensor], size: int
) -> "torch.Tensor | Failure":
    """The preprocessed tensor of one image, or a Failure saying what is wrong with the file."""
    try:
        with PILImage.open(image.path, formats=RASTER_FORMATS) as opened:
            # JPEG can decode straight to a smaller scale (never below the model's input): much less work.
            opened.draft("RGB", (size, size))
            return preprocess(opened.convert("RGB"))
    except FileNotFoundError:
        return Failure(image.image_id, f"missing file: {image.path}")
    except PILImage.DecompressionBombError as error:
        return Failure(image.image_id, f"refused, too large to decode safely: {error}")
    except (OSError, ValueError, SyntaxError) as error:  # what Pillow raises for broken or foreign files
        return Failure(image.image_id, f"unreadable image {image.path}: {error}")


def can_start_processes() -> bool:
    """Whether this process may start decoding processes: not a daemon (Celery's prefork children are billiard's
    daemons; the standard library's view of them says MainProcess, so both are asked)."""
    if multiprocessing.current_process().daemon:
        return False
    try:
        import billiard.process  # Celery's fork of multiprocessing: what its pool's children are
    except ImportError:  # pragma: no cover (Celery is a dependency)
        return True
    return not billiard.process.current_process().daemon


def embed_files(
    embedder: ClipEmbedder,
    images: Iterable[ImageFile],
    *,
    batch_size: int = 64,
    loader_threads: int = 4,
    loader_processes: int = 0,
    progress: Callable[[int], None] | None = None,
) -> Embedded:
    """Embed `images` in batches; `progress(n)` is told after each batch how many images it finished.
    `loader_processes`: decode in that many processes (where this process may start them), else threads."""
    if loader_processes > 0:
        if can_start_processes():
            return _embed_in_processes(embedder, list(images), batch_size, loader_processes, progress)
        logger.warning(
            "QUIRE_EMBED_LOADER_PROCESSES is %s but this worker is a daemon process (Celery's prefork pool), which "
            "may not start any: decoding in %s threads. Run the worker with --pool threads to use processes.",
            loader_processes,
            loader_threads,
        )
    ids: list[int] = []
    taxa: list[int] = []
    vectors: list[np.ndarray] = []
    failures: list[Failure] = []
    batch: list[tuple[ImageFile, torch.Tensor]] = []

    def flush() -> None:
        if batch:
            vectors.append(embedder.encode_pixels(torch.stack([tensor for _, tensor in batch])))
            ids.extend(image.image_id for image, _ in batch)
            taxa.extend(image.taxon_id for image, _ in batch)
            if progress:
                progress(len(batch))
            batch.clear()

    size = embedder.image_size
    with ThreadPoolExecutor(max_workers=max(1, loader_threads), thread_name_prefix="quire-decode") as pool:
        pending: deque[tuple[ImageFile, Future[torch.Tensor | Failure]]] = deque()
        source = iter(images)
        look_ahead = 2 * batch_size
        for image in source:
            pending.append((image, pool.submit(decode, image, embedder.preprocess, size)))
            if len(pending) < look_ahead:
                continue
            _take(pending.popleft(), batch, failures, progress)
            if len(batch) == batch_size:
                flush()
        while pending:
            _take(pending.popleft(), batch, failures, progress)
            if len(batch) == batch_size:
                flush()
        flush()
    return _embedded(ids, taxa, vectors, failures, embedder.dim)


def _embedded(
    ids: list[int], taxa: list[int], vectors: list[np.ndarray], failures: list[Failure], dim: int
) -> Embedded:
    """The batches' results as one answer (an empty one keeps the model's width)."""
    return Embedded(
        image_ids=np.asarray(ids, dtype=np.int64),
        taxon_ids=np.asarray(taxa, dtype=np.int64),
        vectors=np.concatenate(vectors) if vectors else np.empty((0, dim), np.float32),
        failures=failures,
    )


def _take(
    entry: tuple[ImageFile, "Future[torch.Tensor | Failure]"],
    batch: list[tuple[ImageFile, torch.Tensor]],
    failures: list[Failure],
    progress: Callable[[int], None] | None,
) -> None:
    image, future = entry
    result = future.result()
    if isinstance(result, Failure):
        failures.append(result)
        if progress:
            progress(1)
    else:
        batch.append((image, result))


class _Decoding(torch.utils.data.Dataset["Decoded"]):
    """The images of a chunk, decoded and preprocessed by index (in a DataLoader's worker process)."""

    def __init__(self, images: list[ImageFile], preprocess: Callable[[PILImage.Image], torch.Tensor], size: int):
        self.images, self.preprocess, self.size = images, preprocess, size

    def __len__(self) -> int:
        return len(self.images)

    def __getitem__(self, number: int) -> "Decoded":
        return self.images[number], decode(self.images[number], self.preprocess, self.size)


Decoded = tuple[ImageFile, "torch.Tensor | Failure"]


def _stacked(items: list[Decoded]) -> tuple[list[ImageFile], torch.Tensor | None, list[Failure]]:
    """A batch as its worker hands it over: the decoded images, their pixels in one tensor (one shared-memory
    block, not one per image), and the failures."""
    decoded = [(image, result) for image, result in items if not isinstance(result, Failure)]
    failures = [result for _, result in items if isinstance(result, Failure)]
    pixels = torch.stack([tensor for _, tensor in decoded]) if decoded else None
    return [image for image, _ in decoded], pixels, failures


def _embed_in_processes(
    embedder: ClipEmbedder,
    images: list[ImageFile],
    batch_size: int,
    processes: int,
    progress: Callable[[int], None] | None,
) -> Embedded:
    """embed_files with `processes` decoding processes: the same answer, in the same order."""
    logger.info("decoding %s images in %s processes", f"{len(images):,}", processes)
    loader = torch.utils.data.DataLoader(
        _Decoding(images, embedder.preprocess, embedder.image_size),
        batch_size=batch_size,
        num_workers=min(processes, max(1, len(images))),
        collate_fn=_stacked,
        prefetch_factor=4,  # batches each process decodes ahead: the model never waits for the first
        pin_memory=embedder.device.startswith("cuda"),  # page-locked: the copy to the card overlaps the next
    )
    ids: list[int] = []
    taxa: list[int] = []
    vectors: list[np.ndarray] = []
    failures: list[Failure] = []
    for decoded, pixels, failed in loader:
        failures.extend(failed)
        if pixels is not None:
            vectors.append(embedder.encode_pixels(pixels))
            ids.extend(image.image_id for image in decoded)
            taxa.extend(image.taxon_id for image in decoded)
        if progress:
            progress(len(decoded) + len(failed))
    return _embedded(ids, taxa, vectors, failures, embedder.dim)
