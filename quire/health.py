"""`GET /healthz`: whether this web process can reach its database, its broker and (where vectors are in
Milvus) its vector database.

A container's probe (docker/healthcheck.py) and a load balancer ask over plain HTTP from inside the
container or the network, under a host name the deployment does not list in ALLOWED_HOSTS. So this
answers first in the middleware chain, before Django checks the host or redirects to HTTPS, and it
says nothing but "ok" or the failing part's error class: no settings, no versions.
"""

from collections.abc import Callable

from django.conf import settings
from django.db import connections
from django.http import HttpRequest, HttpResponse, JsonResponse

from search.facade import vector_database_problem

PATH = "/healthz"
TIMEOUT_SECONDS = 3


def database() -> str:
    try:
        with connections["default"].cursor() as cursor:
            cursor.execute("SELECT 1")
            cursor.fetchone()
    except Exception as error:  # any failure means unhealthy; say which kind
        return f"unreachable ({type(error).__name__})"
    return "ok"


def broker() -> str:
    if not settings.CELERY_BROKER_URL:
        return "embedded"  # no broker configured: jobs run in a background thread of the web process
    from kombu import Connection  # type: ignore[attr-defined]  # (kombu: see quire/celery.py)

    try:
        with Connection(settings.CELERY_BROKER_URL, connect_timeout=TIMEOUT_SECONDS) as connection:  # type: ignore[no-untyped-call]
            connection.ensure_connection(max_retries=1, interval_start=0, timeout=TIMEOUT_SECONDS)
    except Exception as error:
        return f"unreachable ({type(error).__name__})"
    return "ok"


def vectors() -> str | None:
    """The vector database's state where QUIRE_VECTOR_BACKEND=milvus (None otherwise: FAISS is in-process)."""
    if settings.QUIRE_VECTOR_BACKEND != "milvus":
        return None
    problem = vector_database_problem(timeout=TIMEOUT_SECONDS)
    return "ok" if problem is None else f"unreachable ({problem})"


class HealthCheck:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.path != PATH:
            return self.get_response(request)
        if request.method not in ("GET", "HEAD"):
            return JsonResponse({"error": "GET /healthz"}, status=405)
        checks = {"database": database(), "broker": broker()}
        if (vector_database := vectors()) is not None:
            checks["vectors"] = vector_database
        healthy = all(value in ("ok", "embedded") for value in checks.values())
        response = JsonResponse({"status": "ok" if healthy else "unhealthy", **checks}, status=200 if healthy else 503)
        response["Cache-Control"] = "no-store"
        return response
