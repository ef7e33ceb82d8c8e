"""Images on disk to vectors: decoding in loader threads while the model runs.

Threads, not processes: Celery's prefork workers are daemon processes, which may
not start children (so torch's multiprocess DataLoader cannot run inside them),
and Pillow releases the GIL while it decodes and resizes, as torch does during
the forward pass. A bounded look-ahead keeps the next batches decoding while the
current one is in the model, so the model, not the decoding, sets the pace.

A missing or unreadable image never stops the work: it comes back as a Failure.
"""

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


def embed_files(
    embedder: ClipEmbedder,
    images: Iterable[ImageFile],
    *,
    batch_size: int = 64,
    loader_threads: int = 4,
    progress: Callable[[int], None] | None = None,
) -> Embedded:
    """Embed `images` in batches; `progress(n)` is told after each batch how many images it finished."""
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
    dim = embedder.dim
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
