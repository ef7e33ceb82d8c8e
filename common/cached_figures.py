"""Figures computed in the background and cached until what they read changes: the one cache-aside pattern of the
pages that show a heavy figure (the dashboard's run and TSR, a query's agreement, the team's cost and quality).

A page reads `figure.cached(parts, *task_args)`: the value when it is cached, else nothing, with the figure's task
sent (at most once a poll interval: background.submit_when_polled); the page says "computing…" and asks again. The
task computes the value and `store`s it under the parts it read before computing. The parts carry a marker that
moves with what the figure reads (annotator's QueryTally.changes for labels: one row read, not a COUNT and a MAX
over every judgment), so a write makes the next read miss and nothing is ever invalidated by hand. A None value
is cached too (stored in a tuple)."""

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.core.cache import cache

from common import background

DAY = 24 * 3600


@dataclass(frozen=True)
class BackgroundFigure:
    name: str  # in the cache key: quire:<name>:<parts>
    task: str  # the Celery task, by name, that computes and stores it
    timeout: int = DAY

    def key(self, parts: Iterable[object]) -> str:
        return ":".join(["quire", self.name, *map(str, parts)])

    def cached(self, parts: Iterable[object], *task_args: Any) -> tuple[bool, Any]:
        """(found, value); not found: the task is sent with `task_args`, keyed by these parts."""
        key = self.key(parts)
        stored = cache.get(key)
        if stored is None:
            background.submit_when_polled(self.task, *task_args, key=key)
            return False, None
        return True, stored[0]

    def peek(self, parts: Iterable[object]) -> tuple[bool, Any]:
        """(found, value), sending nothing."""
        stored = cache.get(self.key(parts))
        return (False, None) if stored is None else (True, stored[0])

    def peek_many(self, parts_by_id: Mapping[int, Iterable[object]]) -> dict[int, tuple[bool, Any]]:
        """{id: (found, value)} in one cache read (with Redis, one round trip), sending nothing."""
        keys = {ident: self.key(parts) for ident, parts in parts_by_id.items()}
        stored = cache.get_many(list(keys.values()))
        return {ident: (key in stored, stored[key][0] if key in stored else None) for ident, key in keys.items()}

    def store(self, parts: Iterable[object], value: Any) -> Any:
        cache.set(self.key(parts), (value,), timeout=self.timeout)
        return value

    def computed(self, parts: Iterable[object], compute: Callable[[], Any]) -> Any:
        """The cached value, else `compute()` now, stored: for the task itself, never a request."""
        parts = list(parts)
        found, value = self.peek(parts)
        return value if found else self.store(parts, compute())


def id_set(ids: int | Iterable[int] | None) -> tuple[int, ...] | None:
    """Ids (one, some, or None for all) as a figure's parts and its task's arguments take them: sorted, once each,
    a tuple (a job's arguments are its key in the embedded queue, so they must hash)."""
    if ids is None:
        return None
    return (ids,) if isinstance(ids, int) else tuple(sorted(set(ids)))


def ids_part(ids: tuple[int, ...] | None) -> str:
    """An id_set as one part of a cache key: "all", or "q3-7-12"."""
    return "all" if ids is None else "q" + "-".join(map(str, ids))
