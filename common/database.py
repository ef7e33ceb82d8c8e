"""When PostgreSQL blinks (a restart, a failover, a dropped connection): a sentence, not Django's HTML 500.

`DatabaseOutage` (middleware) answers 503 with what happened and what to do, as JSON to the page's fetch() calls
and the API, as text otherwise; the labeling page already retries a 503 save. `retry_once_if_dropped` runs an
idempotent write view a second time on a new connection, so one dropped connection costs a retry, not a refusal.
"""

import logging
from collections.abc import Callable
from contextlib import suppress
from functools import wraps
from typing import Any, TypeVar, cast

from django.db import InterfaceError, OperationalError, connection
from django.http import HttpRequest, HttpResponse, JsonResponse

log = logging.getLogger(__name__)

UNAVAILABLE = "The database is not answering right now, so nothing was saved: try again in a few seconds."
DATABASE_ERRORS = (OperationalError, InterfaceError)


def wants_json(request: HttpRequest) -> bool:
    accept = request.headers.get("Accept", "")
    return (
        request.path.startswith("/api/")
        or request.content_type == "application/json"
        or ("json" in accept and "html" not in accept)
    )


class DatabaseOutage:
    """Turn a lost database into a 503 that says so (and a Retry-After the page and scripts can follow)."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if not isinstance(exception, DATABASE_ERRORS):
            return None
        log.warning("database unavailable during %s %s: %s", request.method, request.path, exception)
        response: HttpResponse
        if wants_json(request):
            response = JsonResponse({"error": UNAVAILABLE, "detail": UNAVAILABLE}, status=503)
        else:
            response = HttpResponse(UNAVAILABLE, status=503, content_type="text/plain; charset=utf-8")
        response["Retry-After"] = "5"
        return response


V = TypeVar("V", bound=Callable[..., Any])


def retry_once_if_dropped(view: V) -> V:
    """Run `view` again on a fresh connection when the first try lost the database (a dropped or restarted
    server). Only for views that may run twice: label saves are idempotent (the same value twice changes
    nothing). Inside an outer transaction nothing can be retried, so the error goes on to DatabaseOutage."""

    @wraps(view)
    def wrapper(*args: Any, **kwargs: Any) -> Any:  # a view function, or a DRF view's method (self first)
        try:
            return view(*args, **kwargs)
        except DATABASE_ERRORS as error:
            if connection.in_atomic_block:
                raise
            log.warning("database connection lost in %s (%s); trying once more", view.__qualname__, error)
            with suppress(*DATABASE_ERRORS):  # already gone: the next query opens a new one
                connection.close()
            return view(*args, **kwargs)

    return cast(V, wrapper)
