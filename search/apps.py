from django.apps import AppConfig


class SearchConfig(AppConfig):
    """The retrieval engine: embeddings, FAISS indexes, the search function. Knows nothing of labels or HTTP."""

    name = "search"
