"""Uploaded example images get their vector in the background: encoding a photo with CLIP ViT-H/14 takes
a second or more on a CPU, too long to hold the upload's request (and a web worker) for.

The upload is kept at once with no vector; `embed` (the task annotator.embed_example) encodes it, or
records why it could not. The labeling page shows the example as "embedding…" and reloads when it is
ready; `ensure_embedding` sends any example still waiting again (after a crash, or an admin upload), and says
why where the queue is away, without writing it down (the pages that call it answer GETs).
"""

import hashlib
import logging
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from annotator.models import Query, QueryExample
from common import background
from search.facade import SearchUnavailable, configured_spec, embed_image

log = logging.getLogger(__name__)


def embed(example_id: int) -> str:
    """Encode the uploaded example `example_id` with the configured model and keep its vector; on failure
    keep the reason on the example instead. Returns "embedded", "failed" or "gone"; run twice, the second
    run finds the vector and does nothing."""
    example = QueryExample.objects.filter(pk=example_id).first()
    if example is None or not example.upload:
        return "gone"
    if example.vector is not None and example.vector_model == configured_spec().name:
        return "embedded"
    try:
        with example.upload.open("rb") as file, PILImage.open(file) as picture:
            vector = embed_image(picture.convert("RGB"))
    except SearchUnavailable as error:
        return _failed(example_id, f"This example could not be embedded: {error}")
    except (OSError, UnidentifiedImageError) as error:  # the stored file is gone or damaged
        log.warning("example %s: its file could not be read: %s", example_id, error)
        return _failed(example_id, "This example's stored file could not be read as an image: upload it again.")
    QueryExample.objects.filter(pk=example_id).update(
        vector=np.asarray(vector, dtype=np.float32).tobytes(), vector_model=configured_spec().name, embedding_error=""
    )
    return "embedded"


def _failed(example_id: int, reason: str) -> str:
    log.warning("example %s could not be embedded: %s", example_id, reason)
    QueryExample.objects.filter(pk=example_id).update(embedding_error=reason[:500])
    return "failed"


def send(example_id: int, refused: Callable[[background.QueueUnavailable], None] | None = None) -> None:
    """Ask the background for `example_id`'s vector (background.submit_when_polled: the page asks on every
    poll); `refused(error)` when the queue is away."""
    background.submit_when_polled(
        "annotator.embed_example", example_id, key=f"embed-example:{example_id}", on_unavailable=refused
    )


@dataclass
class Embedding:
    """What the pages say of a query's uploads still without a vector: their ids, and why the queue could not take
    them now (a sentence, "" when it could). Nothing is written: a GET only reads, and the next poll asks again, so
    the uploads are embedded once the queue is back."""

    waiting: list[int] = field(default_factory=list)
    refused: str = ""


def waiting(query: Query) -> list[int]:
    """The ids of `query`'s uploads that have no vector yet and no reason why not."""
    return list(
        query.examples.filter(vector__isnull=True, embedding_error="").exclude(upload="").values_list("pk", flat=True)
    )


def ensure_embedding(query: Query) -> Embedding:
    """Send every upload of `query` still waiting for its vector (see `send`), for the pages that poll for them."""
    found = Embedding(waiting(query))

    def refused(error: background.QueueUnavailable) -> None:
        found.refused = f"Your example cannot be embedded now: {error} The page asks again by itself."

    for example_id in found.waiting:
        send(example_id, refused)
    return found


def uploaded_already(query: Query, upload: Any) -> QueryExample | None:
    """The example of `query` whose uploaded file has the same bytes as `upload`, if one has: a second click while
    the first upload was sent, or the same file chosen twice, keeps one example."""
    digest = _digest(upload)
    for example in QueryExample.objects.filter(query=query).exclude(upload=""):
        try:
            with example.upload.open("rb") as kept:
                if _digest(kept) == digest:
                    return example
        except OSError:  # a file gone from the disk is no duplicate
            continue
    return None


def _digest(handle: Any) -> str:
    handle.seek(0)
    found = hashlib.sha256()
    for chunk in iter(lambda: handle.read(1 << 20), b""):
        found.update(chunk)
    handle.seek(0)
    return found.hexdigest()
