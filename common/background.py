"""Run a job outside the web request, with a broker or without one.

With a broker, `submit` puts the Celery task on its queue and a worker runs it. In embedded mode (no
broker: the demo, a laptop) Celery runs tasks eagerly in the caller, which inside a request would hold
the page for the whole job; there one background thread of the web process runs them instead, one at a
time and in the order given (SQLite has one writer). Each job keeps its state in the database, so one
cut short by a restart is not lost: its page notices (`is_pending` says no thread holds it) and sends it
again, and every job here may run twice (a scoring starts over, an embedding job redoes its unfinished
chunks).

Submit from `transaction.on_commit` (see `submit_on_commit`): a worker, or the thread, must find the
job's row committed.

Tasks are named, never imported: a module that queues a job names its task ("annotator.refresh_progress"), so
that a tasks module may import what it runs without a circle, and the project's Celery app is found through
settings.QUIRE_CELERY_APP (common/ knows no project package). tests/test_architecture.py checks every name
sent against the registered tasks.
"""

import logging
import threading
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any

from django.conf import settings
from django.core.cache import cache
from django.db import connections, transaction
from django.utils.module_loading import import_string

log = logging.getLogger(__name__)

_lock = threading.Lock()
_executor: ThreadPoolExecutor | None = None
_pending: dict[tuple[Any, ...], Future[Any]] = {}


def embedded() -> bool:
    """No broker: jobs run in this process's background thread."""
    return settings.CELERY_TASK_ALWAYS_EAGER


class QueueUnavailable(RuntimeError):
    """The broker (Redis) did not take the job; the text says so in the user's words."""


QUEUE_UNAVAILABLE = "The job queue (Redis) is not answering, so the job was not started: try again in a minute."


def celery_app() -> Any:
    """The project's Celery app (settings.QUIRE_CELERY_APP): imported on first use, so that commands that
    queue nothing never load Celery."""
    return import_string(settings.QUIRE_CELERY_APP)


def task_named(name: str) -> Any:
    """The registered Celery task called `name`; the apps' tasks modules are imported on first use (Celery's
    autodiscovery). KeyError for a name no tasks module registers."""
    app = celery_app()
    if name not in app.tasks:
        app.loader.import_default_modules()
    return app.tasks[name]


def send(name: str, *args: Any, queue: str | None = None) -> None:
    """Celery's `delay` by name: to the broker, or eagerly in this process in embedded mode. The broker's own
    errors go to the caller (see `publish` for a sentence)."""
    options = {"queue": queue} if queue else {}
    if embedded():
        task_named(name).apply_async(args, **options)
    else:
        celery_app().send_task(name, args=args, **options)


def publish(name: str, *args: Any, queue: str | None = None) -> None:
    """Send the task `name` through Celery as it is configured (to the broker; eagerly, in this process, in
    embedded mode). Raises QueueUnavailable when the broker cannot be reached."""
    from kombu.exceptions import OperationalError  # kombu loads only when a job is queued

    try:
        send(name, *args, queue=queue)
    except (OperationalError, ConnectionError, TimeoutError) as error:
        log.warning("could not queue %s%s: %s", name, args, error)
        raise QueueUnavailable(QUEUE_UNAVAILABLE) from error


def submit(task: str, *args: Any) -> None:
    """Run the Celery task named `task` with `args` outside this request: on a worker, or in the background thread.
    Raises QueueUnavailable when the broker cannot be reached (within CELERY_BROKER_CONNECTION_TIMEOUT and
    the short publish retry policy in settings, not Celery's minutes-long defaults)."""
    if not embedded():
        publish(task, *args)
        return
    global _executor
    key = (task, *args)
    with _lock:
        if key in _pending:  # already waiting or running here: once is enough
            return
        if _executor is None:
            _executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="quire-background")
        _pending[key] = _executor.submit(_run, task, args, key)


def submit_on_commit(task: str, *args: Any) -> None:
    """submit() once the current transaction commits; outside one, at once, so that QueueUnavailable reaches
    the caller."""
    transaction.on_commit(lambda: submit(task, *args))


# A page polls every two seconds for what a job computes; with a broker the job is sent again at most this often.
RESEND_SECONDS = 60


def submit_when_polled(
    task: str, *args: Any, key: str, on_unavailable: Callable[[QueueUnavailable], None] | None = None
) -> None:
    """submit_on_commit() for a page that asks for the job's result on every poll, without queueing it on
    every poll: in embedded mode submit() already holds a job once however often it is sent; with a broker
    it is sent at most once per RESEND_SECONDS for `key` (a claim in the shared cache), so a job lost with
    its worker is sent again after that. With the queue away, `on_unavailable(error)` (default: nothing;
    the page keeps saying the result is being computed)."""
    if not embedded() and not cache.add(f"quire:sent:{key}", True, timeout=RESEND_SECONDS):
        return

    def send() -> None:
        try:
            submit(task, *args)
        except QueueUnavailable as error:
            if on_unavailable is not None:
                on_unavailable(error)

    transaction.on_commit(send)


def is_pending(task: str, *args: Any) -> bool:
    """Whether this process's background thread holds (waiting or running) this job."""
    with _lock:
        return (task, *args) in _pending


def wait_for_all(timeout: float | None = None) -> None:
    """Block until every job submitted so far has finished (tests; a clean shutdown)."""
    with _lock:
        futures = list(_pending.values())
    wait(futures, timeout=timeout)


def _run(task: str, args: tuple[Any, ...], key: tuple[Any, ...]) -> None:
    try:
        # apply() is Celery's own eager path: the same task code, retries and signals as on a worker.
        result = task_named(task).apply(args=args, throw=False)
        if result.failed():
            log.error("background job %s%r failed: %s", task, args, result.result, exc_info=result.result)
    finally:
        connections.close_all()  # this thread's connections; the request threads keep theirs
        with _lock:
            _pending.pop(key, None)
