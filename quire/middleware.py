"""Request checks that belong to no app."""

import time
from collections.abc import Callable

from django.http import HttpRequest, HttpResponse, HttpResponseBadRequest


class RejectNulCharacters:
    """Answer 400 to a URL whose path or query string holds a NUL character.

    PostgreSQL refuses NUL in text, so such a parameter would otherwise surface as a 500 from
    whichever filter passed it on (a search box, a taxon filter, an API filter). Form and JSON
    bodies are checked where they are read (Django's and DRF's fields refuse NUL already).
    """

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if "\x00" in request.path or any(
            "\x00" in key or "\x00" in value for key, values in request.GET.lists() for value in values
        ):
            return HttpResponseBadRequest("A parameter contains a NUL character; remove it and try again.")
        return self.get_response(request)


class ServerTiming:
    """Add `Server-Timing: app;dur=<ms>` to every response: the time Django spent on the request, which
    browsers' developer tools and load tests read apart from the network's share."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        started = time.perf_counter()
        response = self.get_response(request)
        response["Server-Timing"] = f"app;dur={1000 * (time.perf_counter() - started):.2f}"
        return response


class ContentSecurityPolicy:
    """Quire's pages run only their own scripts (htmx and static/js), load nothing from elsewhere, and are never
    framed: an injected <script> or a stored hostile string cannot run. Inline style attributes stay allowed
    (the dashboard's bars). Django's admin and the API's documentation pages carry inline scripts of their own
    and keep the browser's default; user-supplied files get a stricter sandbox where they are served."""

    POLICY = (
        "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; img-src 'self' data: blob:; "
        "object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    )
    EXEMPT = ("/admin/", "/api/")

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if (
            "Content-Security-Policy" not in response
            and response.get("Content-Type", "").startswith("text/html")
            and not request.path.startswith(self.EXEMPT)
        ):
            response["Content-Security-Policy"] = self.POLICY
        return response
