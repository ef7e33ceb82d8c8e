import os
import threading

from django.apps import AppConfig

# Set by `manage.py demo` for the development server it starts: load the index and the text encoder in the
# background at start, so the first search does not pay for them (gunicorn's workers do the same from
# quire/gunicorn_hooks.py, before they take requests).
WARM_UP_AT_START = "QUIRE_WARM_UP_AT_START"


class SearchConfig(AppConfig):
    """The retrieval engine: embeddings, FAISS indexes, the search function. Knows nothing of labels or HTTP."""

    name = "search"

    def ready(self) -> None:
        if os.environ.get(WARM_UP_AT_START) == "1":
            from .facade import warm_up

            threading.Thread(target=warm_up, name="quire-warm-up", daemon=True).start()
