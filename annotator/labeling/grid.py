"""What the labeling page shows: a page of the ranking for a query, with each image's label as the annotator
looking at it (the viewer) sees it: their own judgment, else the final label, except in their blind overlap
sample (annotator.labels.sealed), where they see the image unlabeled.

Labels belong to the query, not to the text typed in the box: an annotator can
refine the search text or the taxon filters and keep every label.

Pages are positions in the true ranking. With "hide labeled" a page skips the labeled images
it meets but keeps counting positions, so the next page starts right after the last position
looked at, and every tile shows its true rank: nothing is skipped, nothing renumbered.
"""

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from annotator.completeness import sampled
from annotator.labeling.examples import waiting
from annotator.labels.sealed import Writer, seen_by
from annotator.methods.registry import MODEL_RANKINGS
from annotator.methods.rerank import latest_prelabels, latest_scores, panel_ranking, visret_ranking
from annotator.models import Judgment, LabelValue, Query
from catalog.models import Image
from search.facade import (
    NO_TAXON,
    RECENT_ANSWERS,
    STRATEGY_REGISTRY,
    Hit,
    SearchError,
    SearchUnavailable,
    configured_spec,
    lookalike_rule,
    next_batch,
    rank,
    score_images,
    search,
)

PAGE_SIZES = (50, 200, 500)
# "Labeled down to rank N" looks this far down the ranking at most (a few searches).
LABELED_DOWN_TO_LIMIT = 10_000


@dataclass
class Tile:
    rank: int  # 1-based position in the ranking
    score: float
    image: Image
    label: str  # a LabelValue, or "" when not labeled yet
    why: list[Any] | None = None  # structured rerank: [[sub-question, P(yes)], ...]
    prelabel: object = None  # the judge panel's PreLabel, if any
    stack: tuple[int, ...] = ()  # near-identical images waiting behind this one (labeled with it)

    @property
    def why_json(self) -> str:
        return json.dumps(self.why or [])


@dataclass
class ResultsPage:
    tiles: list[Tile]
    offset: int  # position (0-based) of the first ranking entry looked at
    limit: int
    error: str = ""
    next_offset: int | None = None  # where the next page starts; None at the end of the ranking


def results(
    query: Query,
    *,
    viewer: Writer,
    text: str,
    taxon_ids: Iterable[int] | None = None,
    hide_labeled: bool = False,
    offset: int = 0,
    limit: int = 50,
    seen: Mapping[int, str] | None = None,
    within: np.ndarray | None = None,
) -> ResultsPage:
    """Up to `limit` tiles of the ranking for `text` (within `taxon_ids` when given) from position
    `offset` on; with `hide_labeled`, labeled images are passed over. `seen`: what `viewer` sees of the
    query's labels, when the caller has read it already (else the page's images are read). `within`: the
    image ids of a lasso on the map, the only images ranked. Never raises for the user's input: a search that
    cannot run comes back as the page's error."""
    if limit not in PAGE_SIZES:
        limit = PAGE_SIZES[0]
    offset = max(0, offset)
    if within is not None:
        return _text_page_within(query, viewer, text, within, taxon_ids, hide_labeled, offset, limit, seen)
    try:
        return _text_page(query, viewer, text, taxon_ids, hide_labeled, offset, limit, seen)
    except SearchUnavailable as error:
        return ResultsPage([], offset, limit, str(error))


def _text_page(
    query: Query,
    viewer: Writer,
    text: str,
    taxon_ids: Iterable[int] | None,
    hide_labeled: bool,
    offset: int,
    limit: int,
    seen: Mapping[int, str] | None,
) -> ResultsPage:
    """results() over the whole collection: searches from `offset` until the page is full or the ranking ends."""
    tiles: list[Tile] = []
    position = offset  # the next ranking position to look at
    while len(tiles) < limit:
        # With nothing hidden one search fills the page; hiding reads ahead in larger steps.
        want = 2 * limit if hide_labeled else limit
        hits = search(text=text, k=want, offset=position, taxon_ids=taxon_ids)
        found = {tile.image.pk: tile for tile in _tiles(query, viewer, hits, position, seen)}
        for index, hit in enumerate(hits):
            tile = found.get(hit.image_id)
            if tile is not None and not (hide_labeled and tile.label):
                tiles.append(tile)
                if len(tiles) == limit:
                    return ResultsPage(tiles, offset, limit, next_offset=position + index + 1)
        position += len(hits)
        if len(hits) < want:  # the end of the ranking
            return ResultsPage(tiles, offset, limit, next_offset=None)
    return ResultsPage(tiles, offset, limit, next_offset=position)


def _text_page_within(
    query: Query,
    viewer: Writer,
    text: str,
    within: np.ndarray,
    taxon_ids: Iterable[int] | None,
    hide_labeled: bool,
    offset: int,
    limit: int,
    seen: Mapping[int, str] | None,
) -> ResultsPage:
    """results() inside a lasso: the same positions, ranks and hide-labeled rule, over the lasso's ranking."""
    seen = seen_by(query, viewer) if seen is None else seen
    try:
        ranked = _ranked_within(query, viewer, "text", text, within, seen, taxon_ids, keep_labeled=True)
    except SearchUnavailable as error:
        return ResultsPage([], offset, limit, str(error))
    if hide_labeled:  # positions stay those of the lasso's ranking: hiding labeled tiles renumbers nothing
        chosen = [
            (position, hit) for position, hit in enumerate(ranked) if position >= offset and hit.image_id not in seen
        ]
    else:
        chosen = list(enumerate(ranked))[offset:]
    page = chosen[:limit]
    images = Image.objects.select_related("taxon").in_bulk([hit.image_id for _, hit in page])
    tiles = [
        Tile(rank=position + 1, score=hit.score, image=images[hit.image_id], label=seen.get(hit.image_id, ""))
        for position, hit in page
        if hit.image_id in images
    ]
    next_offset = page[-1][0] + 1 if len(chosen) > limit else None
    return ResultsPage(tiles, offset, limit, next_offset=next_offset)


def _tiles(
    query: Query, viewer: Writer, hits: Sequence[Hit], offset: int, seen: Mapping[int, str] | None = None
) -> list[Tile]:
    images = Image.objects.select_related("taxon").in_bulk([hit.image_id for hit in hits])
    labels = seen_by(query, viewer, images) if seen is None else seen
    prelabels = latest_prelabels(query) if query.rerank_jobs.exists() else {}
    return [
        Tile(
            rank=offset + position + 1,
            score=hit.score,
            image=images[hit.image_id],
            label=labels.get(hit.image_id, ""),
            prelabel=prelabels.get(hit.image_id),
            stack=hit.stack,
        )
        for position, hit in enumerate(hits)
        if hit.image_id in images  # an image deleted since the index was built
    ]


def labeled_down_to(
    query: Query,
    *,
    viewer: Writer,
    text: str,
    taxon_ids: Iterable[int] | None = None,
    seen: Mapping[int, str] | None = None,
) -> int | None:
    """N such that ranks 1..N of this ranking are all labeled (INQUIRE's annotators labeled down a
    ranking, as `viewer` sees them); None when the search cannot run. Looks at most LABELED_DOWN_TO_LIMIT
    ranks deep."""
    labeled = set(seen_by(query, viewer) if seen is None else seen)
    if not labeled:
        return 0
    position, step = 0, 500
    try:
        while position < LABELED_DOWN_TO_LIMIT:
            hits = search(text=text, k=step, offset=position, taxon_ids=taxon_ids)
            for hit in hits:
                if hit.image_id not in labeled:
                    return position
                position += 1
            if len(hits) < step:
                return position
    except SearchUnavailable:
        return None
    return position


# The rankings the labeling page offers, in the annotator's words: four of search's strategies (rocchio
# and alpha_qe are for research: simulate_labeling and the API), then the finished model jobs'.
PAGE_STRATEGIES = ("text", "feedback", "image", "fusion")
EMBEDDING_EXAMPLE = "Your uploaded example is still being embedded: this ranking appears once it is ready."
# The open completeness check's sample (annotator.completeness.checks): not a ranking, a random order to label.
CHECK = "check"
WITHIN_SEARCH_RANKINGS_ONLY = (
    "The map's selection filters the search rankings (text, feedback, image, fusion): choose one of them, "
    "or clear the selection on the map."
)
RANKINGS = (
    {name: STRATEGY_REGISTRY[name].description for name in PAGE_STRATEGIES}
    | MODEL_RANKINGS
    | {CHECK: "Completeness check: its random sample, for a blind look"}
)
# The page's rankings that rank from example images (an uploaded one, or an image to rank "like").
EXAMPLE_RANKINGS = tuple(name for name in PAGE_STRATEGIES if STRATEGY_REGISTRY[name].needs_examples)


def candidates(
    query: Query,
    *,
    viewer: Writer,
    strategy: str,
    k: int = 50,
    example_ids: Iterable[int] = (),
    taxon_ids: Iterable[int] | None = None,
    text: str | None = None,
    exclude_ids: Iterable[int] = (),
    offset: int = 0,
    seen: Mapping[int, str] | None = None,
    within: np.ndarray | None = None,
) -> list[Hit]:
    """The next `k` images of `query` that `viewer` sees unlabeled (and not in `exclude_ids`), best first,
    ranked by `strategy` from the labels they see: relevant as positives, not relevant as negatives
    (unsure and undecided count as neither). The examples are `example_ids` when given ("more like
    this"), else the query's relevant examples (collection images and uploads). The first batch of a
    strategy other than text follows search's batch rules (search.facade.next_batch: near-duplicate
    stacks, the text order as a floor, judged on the viewer's recent answers). `within`: image ids (a lasso on
    the map) the candidates are restricted to, ranked by the strategy's scores alone. Raises SearchUnavailable."""
    values = seen_by(query, viewer) if seen is None else seen
    if within is not None:
        return _ranked_within(
            query, viewer, strategy, text or query.text, within, values, taxon_ids, example_ids, exclude_ids
        )[offset : offset + k]
    examples, example_vectors = examples_of(query, example_ids)
    relevant_ids, not_relevant_ids = labeled_ids(values)
    if offset == 0 and strategy != "text":
        return next_batch(
            strategy=strategy,
            text=text or query.text,
            relevant_ids=relevant_ids,
            not_relevant_ids=not_relevant_ids,
            recent=recent_answers(query, viewer),
            example_ids=examples,
            example_vectors=example_vectors,
            k=k,
            taxon_ids=taxon_ids,
            exclude_image_ids=[*values, *exclude_ids],
        )
    return rank(
        strategy=strategy,
        text=text or query.text,
        relevant_ids=relevant_ids,
        not_relevant_ids=not_relevant_ids,
        example_ids=examples,
        example_vectors=example_vectors,
        k=k,
        offset=offset,
        taxon_ids=taxon_ids,
        exclude_image_ids=[*values, *exclude_ids],
    )


def examples_of(query: Query, example_ids: Iterable[int]) -> tuple[list[int], list[np.ndarray]]:
    """What a ranking by examples ranks like: `example_ids` when given ("more like this"), else the query's
    relevant examples (collection images by id, uploads by their stored vector of the configured model)."""
    if example_ids:
        return list(example_ids), []
    examples, vectors = [], []
    model = configured_spec().name
    for example in query.examples.filter(relevant=True):
        if example.image_id:
            examples.append(example.image_id)
        elif example.vector is not None and example.vector_model == model:
            vectors.append(np.frombuffer(bytes(example.vector), dtype=np.float32))
    return examples, vectors


def labeled_ids(values: Mapping[int, str]) -> tuple[list[int], list[int]]:
    """(relevant ids, not relevant ids) of what the viewer sees: a learning ranking's positives and negatives."""
    relevant = [image for image, value in values.items() if value == LabelValue.RELEVANT]
    not_relevant = [image for image, value in values.items() if value == LabelValue.NOT_RELEVANT]
    return relevant, not_relevant


# A lasso holding more images than this is refused: ranking it reads every one of their vectors.
MAX_WITHIN = 200_000


def _ranked_within(
    query: Query,
    viewer: Writer,
    strategy: str,
    text: str,
    within: np.ndarray,
    seen: Mapping[int, str],
    taxon_ids: Iterable[int] | None = None,
    example_ids: Iterable[int] = (),
    exclude_ids: Iterable[int] = (),
    keep_labeled: bool = False,
) -> list[Hit]:
    """Every image of `within` (ids inside a lasso) in the strategy's order, best first: the strategy's vector
    scored against each image's stored vector (exact). Labeled images (as the viewer sees them) and
    `exclude_ids` are left out unless `keep_labeled` (the text ranking's page shows labeled tiles unless hidden).
    Raises SearchUnavailable."""
    ids = np.asarray(within, dtype=np.int64)
    if taxon_ids is not None:
        in_taxa = Image.objects.filter(taxon_id__in=list(taxon_ids)).values_list("id", flat=True)
        ids = ids[np.isin(ids, np.fromiter(in_taxa, dtype=np.int64))]
    skip = set(exclude_ids) if keep_labeled else set(seen) | set(exclude_ids)
    if skip:
        ids = ids[~np.isin(ids, np.fromiter(skip, dtype=np.int64, count=len(skip)))]
    if len(ids) > MAX_WITHIN:
        raise SearchError(
            f"The selection holds {len(ids):,} images; a lasso ranks at most {MAX_WITHIN:,}: draw a smaller one."
        )
    examples, example_vectors = examples_of(query, example_ids)
    relevant_ids, not_relevant_ids = labeled_ids(seen)
    scores = score_images(
        text=text,
        image_ids=ids,
        strategy=strategy,
        relevant_ids=relevant_ids,
        not_relevant_ids=not_relevant_ids,
        example_ids=examples,
        example_vectors=example_vectors,
    )
    found = ~np.isnan(scores)  # an image without a vector (not embedded yet) has no place in the ranking
    ids, scores = ids[found], scores[found]
    order = np.lexsort((ids, -scores))  # best first; ties by id, so pages never shuffle
    return [Hit(image_id=int(ids[i]), score=float(scores[i]), taxon_id=NO_TAXON) for i in order]


def recent_answers(query: Query, viewer: Writer) -> list[tuple[int, bool]]:
    """`viewer`'s last relevant / not relevant judgments on `query`, oldest first, as (image id, relevant):
    how well the ranking they label from is doing now (search/batches.py)."""
    if viewer is None or not viewer.pk:
        return []
    judged = (
        Judgment.objects.filter(query=query, annotator=viewer, value__in=[LabelValue.RELEVANT, LabelValue.NOT_RELEVANT])
        .order_by("-updated_at", "-id")
        .values_list("image_id", "value")[:RECENT_ANSWERS]
    )
    return [(image_id, value == LabelValue.RELEVANT) for image_id, value in reversed(judged)]


def adaptive_results(
    query: Query,
    *,
    viewer: Writer,
    strategy: str,
    text: str,
    taxon_ids: Iterable[int] | None = None,
    example_ids: Iterable[int] = (),
    shown_ids: Iterable[int] = (),
    offset: int = 0,
    limit: int = 50,
    seen: Mapping[int, str] | None = None,
    within: np.ndarray | None = None,
) -> ResultsPage:
    """A page of a ranking that learns: the best `limit` images with no label that are not on the page
    already (`shown_ids`), from everything labeled so far. Positions count on from `offset` (the tiles
    already shown), so tile numbers run on down the page. `within`: a lasso's image ids, the only ones ranked.
    Never raises for the user's input."""
    limit = max(1, min(limit, max(PAGE_SIZES)))
    seen = seen_by(query, viewer) if seen is None else seen  # read once: the ranking and the tiles both need it
    if within is not None and (strategy in MODEL_RANKINGS or strategy == CHECK):
        return ResultsPage([], offset, limit, WITHIN_SEARCH_RANKINGS_ONLY)
    if strategy in MODEL_RANKINGS:
        return _MODEL_RANKING_PAGES[strategy](query, viewer, seen, shown_ids, offset, limit)
    if strategy == CHECK:
        return _check_page(query, viewer, seen, shown_ids, offset, limit)
    try:
        hits = candidates(
            query, viewer=viewer, strategy=strategy, k=limit, example_ids=example_ids, taxon_ids=taxon_ids, text=text,
            exclude_ids=shown_ids, seen=seen, within=within,
        )  # fmt: skip
    except SearchUnavailable as error:
        return ResultsPage([], offset, limit, _why_not(query, strategy, example_ids, error))
    tiles = _tiles(query, viewer, hits, offset, seen)
    return ResultsPage(tiles, offset, limit, next_offset=offset + len(tiles) if len(hits) == limit else None)


def _why_not(query: Query, strategy: str, example_ids: Iterable[int], error: SearchUnavailable) -> str:
    """Why a learned ranking could not run: an example still being embedded, where that is what it waits for."""
    chosen = STRATEGY_REGISTRY.get(strategy)
    if not example_ids and chosen and chosen.needs_examples and waiting(query):
        return EMBEDDING_EXAMPLE
    return str(error)


def _check_page(
    query: Query, viewer: Writer, seen: Mapping[int, str], shown_ids: Iterable[int], offset: int, limit: int
) -> ResultsPage:
    """The open completeness checks' images `viewer` has not judged (the query's own, then the benchmark's), in the
    samples' random order; they are shown unlabeled, as the checks need them judged blind."""
    if not sampled.any_open(query):
        return ResultsPage(
            [], offset, limit, "No completeness check is open for this query: staff draw one in the side pane."
        )
    shown = set(shown_ids)
    wanted = sampled.candidates(query, viewer, limit + len(shown), share=True)  # the viewer's own stretch
    ids = [image_id for image_id in wanted if image_id not in shown]
    if not ids and not shown:
        return ResultsPage(
            [], offset, limit, "You have judged every image of the check: it waits for the others' judgments."
        )
    return _page_of(query, viewer, {}, [(image_id, 0.0) for image_id in ids], (), offset, limit)


def _reranked(
    query: Query, viewer: Writer, seen: Mapping[int, str], shown_ids: Iterable[int], offset: int, limit: int
) -> ResultsPage:
    """The query's last vision-model rerank, best first, with each image's sub-question answers."""
    job, scores = latest_scores(query)
    if job is None:
        return ResultsPage([], offset, limit, "No rerank has finished for this query yet: start one in the side pane.")
    why = {image_id: detail for image_id, _, detail in scores}
    ranked = [(image_id, score) for image_id, score, _ in scores]
    return _page_of(query, viewer, seen, ranked, shown_ids, offset, limit, why)


def _visret(
    query: Query, viewer: Writer, seen: Mapping[int, str], shown_ids: Iterable[int], offset: int, limit: int
) -> ResultsPage:
    """The collection ranked by the query's VisRet drawings (RRF of one image search per drawing)."""
    try:
        fused, drawings = visret_ranking(query, exclude_ids=set(seen) | set(shown_ids))
    except SearchUnavailable as error:
        return ResultsPage([], offset, limit, str(error))
    if not drawings:
        return ResultsPage(
            [], offset, limit, "No VisRet drawing has been made for this query yet: start one in the side pane."
        )
    return _page_of(query, viewer, seen, fused, shown_ids, offset, limit)


def _judged(
    query: Query, viewer: Writer, seen: Mapping[int, str], shown_ids: Iterable[int], offset: int, limit: int
) -> ResultsPage:
    """The judge panel's candidates: confident accepts first, confident rejects last."""
    prelabels = latest_prelabels(query)
    if not prelabels:
        return ResultsPage(
            [], offset, limit, "No judge panel has finished for this query yet: start one in the side pane."
        )
    return _page_of(query, viewer, seen, panel_ranking(prelabels.values()), shown_ids, offset, limit)


# What shows each model ranking of MODEL_RANKINGS (checked at import: a new one cannot lack its page).
_MODEL_RANKING_PAGES = {"rerank": _reranked, "visret": _visret, "judges": _judged}
assert set(_MODEL_RANKING_PAGES) == set(MODEL_RANKINGS)


def _page_of(
    query: Query,
    viewer: Writer,
    seen: Mapping[int, str],
    ranked: Iterable[tuple[int, float]],
    shown_ids: Iterable[int],
    offset: int,
    limit: int,
    why: dict[int, Any] | None = None,
) -> ResultsPage:
    """A page of a stored ranking ((image id, score), best first): the first `limit` images that have no
    label for `viewer` and are not on the page already; `why` gives tiles their sub-question answers."""
    skip = set(seen) | set(shown_ids)
    left = [(image_id, score) for image_id, score in ranked if image_id not in skip]
    page = [Hit(image_id=i, score=score, taxon_id=NO_TAXON) for i, score in left[:limit]]
    tiles = _tiles(query, viewer, page, offset, seen)
    if why:
        for tile in tiles:
            tile.why = why.get(tile.image.pk) or None
    return ResultsPage(tiles, offset, limit, next_offset=offset + len(tiles) if len(left) > limit else None)


def stacks_off() -> str:
    """Why look-alike stacks are off for this collection's model (search/lookalikes.py), or "" where they stack
    (or where nothing can be searched yet: the page says that already)."""
    try:
        rule = lookalike_rule()
    except SearchUnavailable:
        return ""
    return "" if rule.stacks else rule.reason
