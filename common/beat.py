"""Beat for the embedded mode: with no broker there is no Celery beat, so the server process that runs jobs in
its own background thread (the demo's `runserver`) sends beat's tasks itself, at their intervals, from a daemon
thread. Before, the pages did it on a GET (the releases page sent its reaper, a scoring's page sent its job again):
a GET only reads, and a job whose page nobody opened was never reaped.

The schedule is settings.CELERY_BEAT_SCHEDULE plus EMBEDDED_SCHEDULE: what a broker does by itself and a process
of its own must ask for (a scoring the previous server process was running when it stopped is sent again)."""

import logging
import os
import sys
import threading
import time
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings

from common import background

log = logging.getLogger(__name__)

# The environment variable `manage.py demo` sets for the server it starts (search.spec.WARM_UP_AT_START: the same).
SERVER_STARTED = "QUIRE_WARM_UP_AT_START"

# A broker hands a lost worker's task to another worker; in one process, a job lost with the previous process is
# sent again by this entry.
EMBEDDED_SCHEDULE = {"resume-scorings": {"task": "evaluation.resume_scorings", "schedule": 60.0}}
TICK_SECONDS = 1.0

_started: threading.Thread | None = None


def schedule() -> dict[str, Mapping[str, Any]]:
    return {**settings.CELERY_BEAT_SCHEDULE, **EMBEDDED_SCHEDULE}


def tick(due: dict[str, float], now: float, submit: Callable[..., None] = background.submit) -> list[str]:
    """Send every entry of `schedule()` whose time has come (`due`: entry -> when next, updated; an entry not in
    it is due at once) and return their names. A refused send is logged and tried at its next time."""
    sent = []
    for name, entry in schedule().items():
        if now < due.get(name, now):
            continue
        due[name] = now + float(entry["schedule"])
        try:
            submit(entry["task"], *entry.get("args", ()))
        except Exception:  # one task's failure to start must not stop the others' schedule
            log.exception("embedded beat: %s could not be sent", entry["task"])
            continue
        sent.append(name)
    return sent


def serving() -> bool:
    """Whether this process serves pages and runs jobs itself: the embedded mode, in the server the demo starts
    (QUIRE_WARM_UP_AT_START) or in `runserver` (its autoreloader's watcher excepted: it serves nothing)."""
    if not background.embedded():
        return False
    if os.environ.get(SERVER_STARTED) == "1":
        return True
    arguments = sys.argv[1:]
    return (
        bool(arguments)
        and arguments[0] == "runserver"
        and ("--noreload" in arguments or os.environ.get("RUN_MAIN") == "true")
    )


def start() -> threading.Thread | None:
    """Start the beat thread once per process where `serving()`; None elsewhere."""
    global _started
    if _started is not None or not serving():
        return _started
    due: dict[str, float] = {}

    def run() -> None:
        while True:
            tick(due, time.monotonic())
            time.sleep(TICK_SECONDS)

    _started = threading.Thread(target=run, name="quire-embedded-beat", daemon=True)
    _started.start()
    return _started
