"""Why a search cannot be answered. Callers outside search/ catch SearchUnavailable only.

Each subclass says in its text what to do about it (build the index, configure the
weights, embed with the configured model, change the query).
"""


class SearchUnavailable(Exception):
    """The engine cannot answer this search now; the text says what to change."""


class SearchNotReady(SearchUnavailable):
    """Nothing is wrong with the search asked: the engine cannot serve any now (no index, no weights, a vector
    database away). Web callers answer 503."""


class NoIndex(SearchNotReady):
    """No index (or no embeddings) has been built for this model yet."""


class SearchError(SearchUnavailable, ValueError):
    """The search cannot be done as asked (an empty text, an unknown image, a bad k...)."""


class WeightsUnavailable(SearchNotReady):
    """The configured CLIP weights cannot be loaded."""


class StoreMismatch(SearchNotReady):
    """The embedding store was written by another model (or with another dimension) than the one asked for."""


class VectorDatabaseUnavailable(SearchNotReady):
    """The vector database (QUIRE_MILVUS_URI) cannot be reached, opened or asked."""


class NoMap(SearchNotReady):
    """No map of the collection has been computed for this model yet."""
