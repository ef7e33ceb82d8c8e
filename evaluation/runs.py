"""A run made by Quire itself: the configured CLIP model's ranking for every query of the ground truth."""

from search.facade import search

from .inputs import GroundTruth, Run


def run_from_model(truth: GroundTruth, *, depth: int, texts: dict[int, str] | None = None) -> Run:
    """Search the collection with each query's text (from the queries file, else the database)."""
    from annotator.models import Query

    texts = dict(texts or {})
    for query_id, columns in truth.queries.items():
        texts.setdefault(query_id, columns.get("query_text", ""))
    missing = [q for q in truth.query_ids() if not texts.get(q)]
    texts.update(Query.objects.filter(pk__in=missing).values_list("id", "text"))
    ranked = {}
    for query_id in truth.query_ids():
        if texts.get(query_id):
            ranked[query_id] = [(hit.image_id, hit.score) for hit in search(text=texts[query_id], k=depth)]
    return Run("configured model", ranked)
