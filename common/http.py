"""Small answers every app's views share: a login check for the page's own fetch() calls, and the headers of
a file a user or a model made, served on its own."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.http import HttpRequest, HttpResponse, JsonResponse

View = Callable[..., HttpResponse]


def json_login_required(view: View) -> View:
    """For the page's fetch() calls: an ended session answers 401 with a sentence, not a redirect to
    the login page (which fetch would follow and read as a success)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponse:
        if not request.user.is_authenticated:
            return JsonResponse(
                {"error": "Your session ended: log in again.", "login_url": settings.LOGIN_URL}, status=401
            )
        return view(request, *args, **kwargs)

    return wrapper


def sandboxed(response: HttpResponse) -> HttpResponse:
    """A file a user or a model made, opened on its own: no script runs, nothing is fetched, no type is sniffed."""
    response["Content-Security-Policy"] = "sandbox; default-src 'none'; img-src 'self'"
    response["X-Content-Type-Options"] = "nosniff"
    return response
