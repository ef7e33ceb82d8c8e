"""What a model can run over a query (a RerankJob's `method`), in one registry that the side pane's
buttons, the labeling page's rankings, `manage.py rerank`, the job runner and evaluation's runs all read.

Cheap to import: no model client loads here (annotator.rerank runs the methods).
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelMethod:
    name: str  # stored on RerankJob.method and RerankScore.method
    button: str  # the side pane's button
    title: str  # the button's hover text: what the method does
    page_ranking: str  # the labeling page's ranking that shows its result
    ranking_description: str  # that ranking in the annotator's words (the ranking menu)
    scores_each_image: bool  # a vision model's score per image (RerankScore rows), as INQUIRE-Rerank


MODEL_METHODS: dict[str, ModelMethod] = {
    method.name: method
    for method in (
        ModelMethod(
            "yesno",
            "Rerank the top 100",
            "INQUIRE: P(yes) for each of the CLIP top 100",
            "rerank",
            "the vision model's rerank",
            True,
        ),
        ModelMethod(
            "structured",
            "Structured rerank",
            "sub-questions, answers chained",
            "rerank",
            "the vision model's rerank",
            True,
        ),
        ModelMethod(
            "judges",
            "Judge panel",
            "a panel of judges pre-labels the CLIP top 100",
            "judges",
            "the judge panel's pre-labels",
            False,
        ),
        ModelMethod(
            "visret",
            "Draw it (VisRet)",
            "draw the query, search with the drawings",
            "visret",
            "drawings of the query (VisRet)",
            False,
        ),
    )
}
# The reranks proper: a score per image of the CLIP top N (manage.py rerank runs these).
RERANK_METHODS = tuple(name for name, method in MODEL_METHODS.items() if method.scores_each_image)
# The labeling page's rankings that show a finished job: {ranking: description}.
MODEL_RANKINGS = {method.page_ranking: method.ranking_description for method in MODEL_METHODS.values()}


def page_ranking(method: str) -> str:
    """The labeling page's ranking that shows a job of `method` ("rerank" for an unknown, older one)."""
    known = MODEL_METHODS.get(method)
    return known.page_ranking if known else "rerank"
