"""A run made by Quire itself: the configured CLIP model's ranking for every query of the ground truth, or
one of the model-based systems on top of it (two-stage: the CLIP top N reranked, the rest in CLIP order)."""

from collections.abc import Callable

from annotator.facade import MODEL_METHODS, model_of, ranking_by
from annotator.models import Query
from search.facade import search_texts

from .inputs import GroundTruth, Run

TEXTS_AT_ONCE = 256  # INQUIRE's 250 queries in one batch


def run_from_model(truth: GroundTruth, *, depth: int, texts: dict[int, str] | None = None) -> Run:
    """Search the collection with each query's text (from the queries file, else the database)."""
    texts = dict(texts or {})
    for query_id, columns in truth.queries.items():
        texts.setdefault(query_id, columns.get("query_text", ""))
    missing = [q for q in truth.query_ids() if not texts.get(q)]
    texts.update(Query.objects.filter(pk__in=missing).values_list("id", "text"))
    asked = [query_id for query_id in truth.query_ids() if texts.get(query_id)]
    ranked = dict(zip(asked, _clip_rankings([texts[q] for q in asked], depth), strict=True))
    return Run("configured model", ranked)


def _clip_rankings(texts: list[str], depth: int) -> list[list[tuple[int, float]]]:
    """The configured model's top `depth` (image id, score) for each text, in batches: one encoding of the texts
    each, and on a GPU host one ranking (search.facade.search_texts)."""
    rankings = []
    for start in range(0, len(texts), TEXTS_AT_ONCE):
        for hits in search_texts(texts[start : start + TEXTS_AT_ONCE], k=depth):
            rankings.append([(hit.image_id, hit.score) for hit in hits])
    return rankings


# The configured CLIP model alone, or a model method on top of it (annotator.methods.registry).
METHODS = ("clip", *MODEL_METHODS)


def run_from_method(
    truth: GroundTruth, method: str, *, depth: int, top: int = 100, progress: Callable[[int, int], None] | None = None
) -> Run:
    """`method` over every query of the ground truth that Quire has (its text and id in the database):
    yesno and structured rerank the CLIP top `top` (annotator.methods.rerank), judges orders it by the panel's
    verdicts, visret draws the query and fuses the image searches. Below the reranked top, the CLIP ranking
    continues, so the run serves both INQUIRE protocols (Rerank: the top 100; full-rank: two-stage).
    Raises ModelUnavailable, SearchUnavailable, or ValueError naming queries Quire does not have."""
    if method == "clip":
        return run_from_model(truth, depth=depth)
    model_of(method)  # no model configured for it: say so now, before any query is searched
    queries = Query.objects.in_bulk(truth.query_ids())
    if missing := [q for q in truth.query_ids() if q not in queries]:
        raise ValueError(
            f"Quire has no query {', '.join(map(str, missing[:5]))}: import the queries before running {method}."
        )
    ordered = sorted(queries.items())
    clips = _clip_rankings([query.text for _, query in ordered], max(depth, top))
    ranked = {}
    for number, ((query_id, query), clip) in enumerate(zip(ordered, clips, strict=True), start=1):
        ranked[query_id] = _head_then_clip(ranking_by(query, method, top=top, depth=depth), clip)[:depth]
        if progress:
            progress(number, len(queries))
    return Run(f"{method} (top {top})" if method != "clip" else "configured model", ranked)


def _head_then_clip(head: list[tuple[int, float]], clip: list[tuple[int, float]]) -> list[tuple[int, float]]:
    """The method's head, then the CLIP ranking's images it did not hold, their scores shifted under the head's
    lowest, so that a run sorted by score keeps this order."""
    seen = {image_id for image_id, _ in head}
    floor = min((score for _, score in head), default=0.0) - 1.0
    return head + [(image_id, floor - position) for position, (image_id, _) in enumerate(clip) if image_id not in seen]
