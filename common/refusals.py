"""One kind of answer for every htmx request that is refused, so that the page can always say why.

htmx 2 does not swap a 4xx or 5xx answer, and it follows a redirect to the login page as if it were the
fragment asked for (the login page then lands inside the grid). So, for htmx requests only:

* a view that drew its refusal for the request's target (the side pane's model box, with its sentence)
  marks it with `drawn_for_target()`, and static/js/pages.js swaps it in like any answer;
* every other refusal (a plain sentence, a JSON error, Django's 403/404/500 pages, the CSRF failure page)
  becomes a short plain-text sentence that static/js/pages.js shows next to the control that asked;
* an ended session (the redirect to the login page) answers 401 with "Your session ended" and, in the
  `X-Login-Url` header, where to log in and come back.

Requests that are not htmx's (forms, the page's own fetch() calls, the API) are left exactly as they were.
"""

import json
from collections.abc import Callable
from urllib.parse import urlencode, urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.shortcuts import resolve_url
from django.views.csrf import csrf_failure as django_csrf_failure

from common.http import session_ended_json

FRAGMENT_HEADER = "X-Quire-Refusal"
SESSION_ENDED = "Your session ended: log in again (nothing on this page was lost)."
MAX_SENTENCE = 500

_GENERIC = {
    400: "The request was refused (400): reload the page and try again.",
    403: "This is not allowed here (403): reload the page; if it persists, ask an admin.",
    404: "Not found (404): it may have been removed; reload the page.",
    405: "This action is not available here (405): reload the page.",
    413: "What you sent is too large (413).",
    429: "Too many requests (429): wait a minute, then try again.",
}


def drawn_for_target(response: HttpResponse) -> HttpResponse:
    """Mark a refusal (4xx or 5xx) drawn as the fragment the htmx request's target expects."""
    response[FRAGMENT_HEADER] = "fragment"
    return response


class HtmxRefusals:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        response = self.get_response(request)
        if request.headers.get("HX-Request") != "true":
            return response
        if response.status_code in (301, 302) and _to_login(response):
            ended = _sentence(401, SESSION_ENDED)
            ended["X-Login-Url"] = _login_url(request)
            return ended
        if response.status_code < 400 or response.get(FRAGMENT_HEADER) == "fragment":
            return response
        refused = _sentence(response.status_code, sentence_of(response))
        for kept in ("Retry-After", "X-Login-Url"):
            if response.has_header(kept):
                refused[kept] = response[kept]
        return refused


def sentence_of(response: HttpResponse) -> str:
    """What a refusal says, in one short sentence: its own words where it has some (plain text, a JSON
    "error" or "detail"), else a sentence for its status."""
    status = response.status_code
    if getattr(response, "streaming", False):
        return _generic(status)
    content_type = response.get("Content-Type", "")
    body = response.content.decode(response.charset or "utf-8", errors="replace").strip()
    if content_type.startswith("application/json"):
        words = _json_words(body)
        return _short(words) if words else _generic(status)
    if "CSRF" in body and status == 403:
        return "This page is out of date (its security token expired): reload it, then try again."
    if content_type.startswith("text/plain") or (body and "<" not in body):
        return _short(body) if body else _generic(status)
    return _generic(status)  # an HTML page (Django's error pages): its words are not a sentence


def _json_words(body: str) -> str:
    """A JSON refusal's "error" or "detail", as text; "" where it has neither (or is not JSON)."""
    try:
        said = json.loads(body)
    except ValueError:
        return ""
    words = said.get("error") or said.get("detail") if isinstance(said, dict) else None
    return str(words) if words else ""


def _generic(status: int) -> str:
    if status >= 500:
        return f"The server could not do this ({status}): try again in a moment; if it persists, tell an admin."
    return _GENERIC.get(status, f"The request was refused ({status}): reload the page and try again.")


def _short(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_SENTENCE else text[: MAX_SENTENCE - 1] + "…"


def _sentence(status: int, sentence: str) -> HttpResponse:
    return HttpResponse(sentence, status=status, content_type="text/plain; charset=utf-8")


def _to_login(response: HttpResponse) -> bool:
    return urlsplit(response.get("Location", "")).path == resolve_url(settings.LOGIN_URL)


def _login_url(request: HttpRequest) -> str:
    """The login page, coming back to the page the request came from (htmx names it), else to this path."""
    current = urlsplit(request.headers.get("HX-Current-URL", ""))
    back = current.path + (f"?{current.query}" if current.query else "") if current.path else request.path
    return f"{resolve_url(settings.LOGIN_URL)}?{urlencode({'next': back})}"


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's CSRF_FAILURE_VIEW. Where the browser lost every cookie (its "clear site data"), the CSRF check
    fails before any login check could say what happened: a request without a signed-in user is told its
    session ended (401, where to log in in `X-Login-Url` and, for the page's fetch() calls, in JSON as
    json_login_required answers), so the labeling page keeps its labels waiting and links to the login. A
    signed-in user's stale token gets Django's own page (HtmxRefusals turns it into a sentence for htmx)."""
    if getattr(request, "user", None) is not None and request.user.is_authenticated:
        return django_csrf_failure(request, reason)
    login_url = _login_url(request)
    wants_json = "application/json" in request.headers.get("Accept", "")
    ended: HttpResponse = session_ended_json(login_url) if wants_json else _sentence(401, SESSION_ENDED)
    ended["X-Login-Url"] = login_url
    return ended
