"""Small answers every app's views share: a login check for the page's own fetch() calls, and the headers of
a file a user or a model made, served on its own."""

from collections.abc import Callable
from functools import wraps
from typing import Any

from django.conf import settings
from django.contrib.auth.models import User
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponseBase, JsonResponse
from django_htmx.middleware import HtmxDetails

View = Callable[..., HttpResponseBase]


class SignedInRequest(HttpRequest):
    """What a view behind login_required receives: a signed-in user (never AnonymousUser), and django-htmx's
    `htmx` (its middleware sets it on every request). For the type checker only: Django builds the request."""

    user: User
    htmx: HtmxDetails


def user_of(request: HttpRequest) -> User:
    """The signed-in user of a request a login check let through (the admin's, a view's); PermissionDenied for
    anyone else, which such a request never is."""
    if not isinstance(request.user, User):
        raise PermissionDenied("Sign in first.")
    return request.user


def json_login_required(view: View) -> View:
    """For the page's fetch() calls: an ended session answers 401 with a sentence, not a redirect to
    the login page (which fetch would follow and read as a success)."""

    @wraps(view)
    def wrapper(request: HttpRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if not request.user.is_authenticated:
            return session_ended_json(settings.LOGIN_URL)
        return view(request, *args, **kwargs)

    return wrapper


def session_ended_json(login_url: str) -> JsonResponse:
    """What the page's fetch() calls are told when no one is signed in any more (401): the sentence, and where to
    log in. The labeling page keeps its labels waiting on it (static/js/labeling/save-queue.js)."""
    return JsonResponse({"error": "Your session ended: log in again.", "login_url": login_url}, status=401)


def sandboxed(response: HttpResponseBase) -> HttpResponseBase:
    """A file a user or a model made, opened on its own: no script runs, nothing is fetched, no type is sniffed."""
    response["Content-Security-Policy"] = "sandbox; default-src 'none'; img-src 'self'"
    response["X-Content-Type-Options"] = "nosniff"
    return response
