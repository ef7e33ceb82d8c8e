import os
import threading

from django.apps import AppConfig

from .spec import WARM_UP_AT_START


class SearchConfig(AppConfig):
    """The retrieval engine: embeddings, FAISS indexes, the search function. Knows nothing of labels or HTTP."""

    name = "search"

    def ready(self) -> None:
        from .device import check_at_start  # settings are read: Django allows it from ready() on

        check_at_start()
        if os.environ.get(WARM_UP_AT_START) == "1":
            from .facade import warm_up  # models and the engine: Django allows them from ready() on

            threading.Thread(target=warm_up, name="quire-warm-up", daemon=True).start()
