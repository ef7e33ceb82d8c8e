"""Two-stage reranking (INQUIRE's setting): the CLIP top N of a query, scored by a vision-language
model's P(yes), best first. Scores are stored per (query, image, method, model); the model's answers
are cached by lmm/ so a second rerank of the same images asks nothing.
"""

import logging
from dataclasses import dataclass, field

from catalog.models import Image
from catalog.thumbnails import NotServable, original_file
from lmm.scoring import ImageInput, configured_scorer, score_images
from search.facade import search

from .models import Query, RerankScore

METHODS = ("yesno",)
DEFAULT_TOP = 100  # INQUIRE-Rerank: 100 candidates per query

log = logging.getLogger(__name__)


@dataclass
class Reranked:
    ranking: list[tuple[int, float]]  # (image id, score), best first
    asked: int
    cached: int
    skipped: list[int] = field(default_factory=list)  # candidates whose file could not be read


def rerank(query: Query, *, top: int = DEFAULT_TOP, method: str = "yesno", scorer=None, progress=None) -> Reranked:
    """Rerank the CLIP top `top` of `query` with `method`. Raises SearchUnavailable (no index) or
    ModelUnavailable (no model, or it failed: the answers given so far stay cached)."""
    if method not in METHODS:
        raise ValueError(f"method is one of {', '.join(METHODS)}, not {method!r}")
    scorer = scorer or configured_scorer()
    hits = search(text=query.text, k=top)
    clip_rank = {hit.image_id: rank for rank, hit in enumerate(hits, start=1)}
    images, skipped = {}, []
    for image in Image.objects.in_bulk(list(clip_rank)).values():
        try:
            path, content_type = original_file(image)
            images[image.pk] = ImageInput(path.read_bytes(), content_type)
        except (NotServable, OSError) as error:
            log.warning("rerank of query %s: image %s skipped: %s", query.pk, image.pk, error)
            skipped.append(image.pk)
    scored = score_images(scorer, query.text, images, progress=progress)
    RerankScore.objects.bulk_create(
        [
            RerankScore(
                query=query, image_id=image_id, method=method, model=scorer.name, score=answer.score,
                clip_rank=clip_rank[image_id],
            )
            for image_id, answer in scored.answers.items()
        ],
        update_conflicts=True,
        unique_fields=["query", "image", "method", "model"],
        update_fields=["score", "clip_rank", "created_at"],
    )  # fmt: skip
    ranking = sorted(scored.answers.items(), key=lambda pair: (-pair[1].score, clip_rank[pair[0]]))
    return Reranked(
        [(image_id, answer.score) for image_id, answer in ranking], scored.asked, scored.cached, sorted(skipped)
    )
