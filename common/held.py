"""Which background jobs a live worker holds: the one test that tells a job whose worker died from a slow one.

A worker running a job holds it for the whole run (`holding`). On PostgreSQL that is a session-level advisory lock
(pg_advisory_lock): the server frees it the moment the worker's connection ends, whether the worker finished, was
killed with -9, lost its machine, or lost the database itself (a restart ends every session). So a reaper that can
take the lock (`is_held` is False) knows the job's worker is gone, at once, with no heartbeat to tune and no
timeout to wait out. Without PostgreSQL (the embedded demo: one process, its background thread) the process keeps
the set of jobs its thread runs; a job that process does not hold was cut short by a restart.

Keys are (kind, job id): the kind's CRC-32 as the lock's first 32-bit half, the id as the second.

The contract with a job's model, for `orphans` and `requeue_or_fail` (search.models.MapLayout and IndexBuild keep
it; annotator.models.ReleaseJob, reaped by its own code, the part `orphans` reads):
- `status`, a text field whose values include "queued", "running" and "failed" (the reapers write these literals);
  a reaper reads only rows its caller selected as "running";
- for `requeue_or_fail`: `attempts`, an integer the job's worker raises by one each time it takes the job up (the
  reaper compares it with `most`, never changes it), `error` (text: the failure's sentence) and `finished_at` (a
  datetime);
- the worker wraps its whole run in `holding(kind, job.pk)`, with the same `kind` the reaper is given, and sets
  "running" itself inside it: a row marked running outside `holding` looks orphaned to the next reaper.
"""

import threading
import zlib
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import Any, TypeVar

from django.db import connection
from django.utils import timezone

from common import background

Job = TypeVar("Job", bound=Any)  # a job's row: anything with a pk
_held: set[tuple[str, int]] = set()
_lock = threading.Lock()


def _key(kind: str, job_id: int) -> tuple[int, int]:
    return zlib.crc32(kind.encode()) & 0x7FFFFFFF, int(job_id)


@contextmanager
def holding(kind: str, job_id: int) -> Iterator[None]:
    """Hold the job while its work runs (re-entrant in one session, as PostgreSQL's advisory locks are)."""
    with _lock:
        _held.add((kind, job_id))
    postgres = connection.vendor == "postgresql"
    try:
        if postgres:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_lock(%s, %s)", _key(kind, job_id))
        yield
    finally:
        with _lock:
            _held.discard((kind, job_id))
        if postgres:
            try:
                with connection.cursor() as cursor:
                    cursor.execute("SELECT pg_advisory_unlock(%s, %s)", _key(kind, job_id))
            except Exception:  # the connection itself is gone: so is its lock  # S110
                pass


def is_held(kind: str, job_id: int) -> bool:
    """Whether a live worker holds the job. Call it from a session that holds no job (a reaper's task)."""
    if (kind, job_id) in _held:
        return True
    if connection.vendor != "postgresql":
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", _key(kind, job_id))
        free = cursor.fetchone()[0]
        if free:
            cursor.execute("SELECT pg_advisory_unlock(%s, %s)", _key(kind, job_id))
    return not free


def orphans(kind: str, running: Iterable[Job]) -> Iterator[Job]:
    """The jobs among `running` (rows marked running) that no live worker holds: their worker stopped. A reaper
    then changes each with a conditional UPDATE (still running?), so two reapers never both act on one."""
    for job in running:
        if not is_held(kind, job.pk):
            yield job


def requeue_or_fail(kind: str, running: Any, most: int, task: str, *, failed: str) -> list[int]:
    """A reaper for jobs that resume (a map layout, an index build): each of `running` (a queryset of rows with
    status, attempts, error and finished_at) that no live worker holds is queued again and sent as `task`, or,
    once `most` workers took it up, marked failed with `failed` (formatted with its attempts). The ids handled."""
    handled = []
    for job in orphans(kind, running):
        still = running.model.objects.filter(pk=job.pk, status="running")
        if job.attempts >= most:
            still.update(status="failed", finished_at=timezone.now(), error=failed.format(attempts=job.attempts))
        elif still.update(status="queued"):
            background.send(task, job.pk)
        handled.append(job.pk)
    return handled
