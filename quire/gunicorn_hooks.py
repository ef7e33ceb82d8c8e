"""Gunicorn's settings for Quire's web role (docker/entrypoint.sh: `--config python:quire.gunicorn_hooks`).

Each worker loads Django's URLs, the search index and the CLIP text encoder once it has started, before it
takes requests, instead of on its first request. QUIRE_WARM_UP=0 turns this off (a worker then starts in
about a second and its first search pays instead).
"""

import gc
import os
import time
from typing import Any

# The longest request line gunicorn accepts (its most; its default is 4,094): a lasso of search.polygon's
# MAX_VERTICES travels in the address of a GET (within=), about 4,700 bytes at nine decimals.
limit_request_line = 8190


def post_worker_init(worker: Any) -> None:  # a gunicorn Worker
    if os.environ.get("QUIRE_WARM_UP", "1") != "0":
        started = time.monotonic()
        from django.urls import get_resolver  # (likewise)

        from search.facade import warm_up  # gunicorn reads this file before Django is set up

        get_resolver().url_patterns  # noqa: B018 -- imports every view module (the admin's autodiscover too)
        outcome = warm_up()
        worker.log.info("worker %s: %s (%.1f s)", worker.pid, outcome, time.monotonic() - started)
    # What start-up made (modules, URLs, models, the text encoder) lives as long as the worker: frozen out of the
    # collector's reach (Python's gc.freeze), a full collection no longer walks it on the requests that trigger
    # one. Rendering the dashboard of 250 queries 21 times in one process, the slowest renders fell from 160 to
    # 190 ms to about 100 ms with it (bench/RESULTS.md, issue 41).
    gc.collect()
    gc.freeze()
