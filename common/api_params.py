"""What API requests may carry: bounded paging and checked query parameters, shared by every API view.

Kept apart from the views: DRF's settings import the pagination class from here while its own
view classes are still loading.
"""

import json
import re
from collections.abc import Iterable, Mapping
from typing import IO, TYPE_CHECKING, Any

from django.contrib.auth.models import User
from drf_spectacular.utils import OpenApiResponse, extend_schema_field
from rest_framework import serializers
from rest_framework.authentication import BaseAuthentication, TokenAuthentication, get_authorization_header
from rest_framework.exceptions import (
    AuthenticationFailed,
    NotAuthenticated,
    NotFound,
    ParseError,
    Throttled,
    ValidationError,
)
from rest_framework.pagination import Cursor, CursorPagination, LimitOffsetPagination
from rest_framework.parsers import JSONParser
from rest_framework.permissions import BasePermission
from rest_framework.request import Request
from rest_framework.throttling import AnonRateThrottle

if TYPE_CHECKING:  # DRF's views import this module (its settings name the classes below): no circle at run time
    from rest_framework.views import APIView


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """?limit=&offset= paging with both bounded: a limit over max_limit is cut to it, and an offset
    past what the database can count is refused (400) instead of reaching it."""

    default_limit = 100
    max_limit = 1000

    def get_offset(self, request: Request) -> int:
        int_param(request, self.offset_query_param, high=BIGINT)  # 400 when malformed or too large
        return super().get_offset(request)

    def get_limit(self, request: Request) -> int | None:
        int_param(request, self.limit_query_param, high=BIGINT)
        return super().get_limit(request)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """DRF's parameters with the bounds get_offset and get_limit hold them to."""
        return _bounded(super().get_schema_operation_parameters(view), {"limit": 0, "offset": 0})


class ByIdCursorPagination(CursorPagination):
    """Paging without COUNT(*): a count over 5M images costs more than the page itself."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000

    def decode_cursor(self, request: Request) -> Cursor | None:
        """DRF's decoding, and the position checked to be an id: a forged cursor (`p=abc`) would otherwise
        reach the database's filter and answer 500. Either way a cursor that is not one of ours names no page: 404,
        as DRF answers and the schema says (common.api_schema)."""
        cursor = super().decode_cursor(request)
        if cursor is not None and cursor.position is not None and strict_id(cursor.position) is None:
            raise NotFound(self.invalid_cursor_message)
        return cursor

    def get_page_size(self, request: Request) -> int | None:
        """The page size asked for: 1 or more (a larger one is cut to max_page_size), 400 otherwise."""
        asked = int_param(request, self.page_size_query_param, high=BIGINT)
        if asked is not None and asked < 1:
            raise ValidationError({self.page_size_query_param: "must be 1 or more"})
        return super().get_page_size(request)

    def get_schema_operation_parameters(self, view: Any) -> list[dict[str, Any]]:
        """DRF's parameters with the bounds get_page_size holds the page size to."""
        return _bounded(super().get_schema_operation_parameters(view), {self.page_size_query_param: 1})


def _bounded(parameters: list[dict[str, Any]], lowest: dict[str, int]) -> list[dict[str, Any]]:
    """Paging parameters whose integer schemas say their bounds: what the paginators refuse, the schema does too."""
    for parameter in parameters:
        if parameter["name"] in lowest:
            parameter["schema"] = {"type": "integer", "minimum": lowest[parameter["name"]], "maximum": BIGINT - 1}
    return parameters


BIGINT = 2**63  # the database's whole numbers end here: a larger one must be refused, not sent


def int_param(request: Request, name: str, *, high: int = BIGINT) -> int | None:
    """A whole-number query parameter (ASCII digits, below `high`), None when absent; otherwise 400."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or int(value) >= high:
        raise ValidationError({name: f"must be a whole number from 0 to {high - 1}, not {value[:40]!r}"})
    return int(value)


def int_list_param(request: Request, name: str, *, high: int = BIGINT) -> list[int]:
    """A repeatable whole-number query parameter (?image=1&image=2); 400 for any malformed value."""
    values = request.query_params.getlist(name)
    if not all(value.isascii() and value.isdigit() and int(value) < high for value in values):
        raise ValidationError({name: f"must be whole numbers from 0 to {high - 1}"})
    return [int(value) for value in values]


def choice_param(request: Request, name: str, choices: Iterable[str]) -> str | None:
    """A query parameter that must be one of `choices`, None when absent; otherwise 400. Empty is not one of them
    (the schema's enum does not list it): leave the parameter out for any value."""
    value = request.query_params.get(name)
    if value is None:
        return None
    if value not in choices:
        shown = f"{value[:40]!r}" if value else "empty (leave it out for any)"
        raise ValidationError({name: f"must be one of {', '.join(choices)}, not {shown}"})
    return value


def text_param(request: Request, name: str, *, max_length: int = 200) -> str:
    """A free-text query parameter: no NUL character (databases refuse it), at most `max_length` characters."""
    value = request.query_params.get(name, "").strip()
    if "\x00" in value:
        raise ValidationError({name: "must not contain a NUL character"})
    if len(value) > max_length:
        raise ValidationError({name: f"must be at most {max_length} characters"})
    return value


def signed_in(request: Request) -> User:
    """The user of a request the API's IsAuthenticated permission let through (settings.AUTH_USER_MODEL is
    Django's User); 401 for anyone else."""
    if not isinstance(request.user, User):
        raise NotAuthenticated()
    return request.user


def strict_id(value: Any) -> int | None:
    """An id as a request carries it: a JSON whole number or a string of ASCII digits (form posts),
    0 to 2^63 - 1; None for anything else (1.5 or true is not image 1)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < BIGINT:
        return None
    return value


# An id or count as the API reads one (strict_id, int_param): a whole number from 0, so that the schema refuses
# what the code refuses (a negative id is a 400, not a request the schema allows).
ID_SCHEMA: dict[str, Any] = {"type": "integer", "minimum": 0, "maximum": BIGINT - 1}


@extend_schema_field(ID_SCHEMA)
class StrictPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):  # type: ignore[type-arg]  # any model
    """A primary key that must be a strict_id."""

    def to_internal_value(self, data: Any) -> Any:
        if strict_id(data) is None:
            self.fail("incorrect_type", data_type=type(data).__name__)
        return super().to_internal_value(strict_id(data))


# What list endpoints answer when a parameter is wrong, for the OpenAPI schema.


def counted(low: int, high: int) -> dict[str, Any]:
    """The schema of a whole-number parameter from `low` to `high`."""
    return {"type": "integer", "minimum": low, "maximum": high}


BAD_PARAMETERS = {400: OpenApiResponse(description="A parameter is malformed; the body names it and says why.")}
NOT_FOUND = {404: OpenApiResponse(description="No such object.")}
REFUSED = {
    403: OpenApiResponse(description="Not allowed: a permission is missing or the query locked; the body says which.")
}
CONFLICT = {409: OpenApiResponse(description="Nothing to do in this state (the judgments agree); the body says why.")}
STATE = {
    409: OpenApiResponse(
        description="A well-formed request the project's state refuses (no labels yet, no sample can certify, "
        "positives waiting for confirmation, a check open over another frame); the body says what to do first."
    )
}
SEARCH_NOT_READY = {
    503: OpenApiResponse(
        description="Search cannot serve now (no index built, the vector database away); the body says what to do."
    )
}


# --- JSON bodies: bounded before they are parsed -------------------------------------------------------
# A batch of 5,000 labels is about 300 KB; nothing Quire takes as JSON is deeper than a few levels. Python's
# parser recurses once per level (100,000 levels: RecursionError, a 500) and DRF reads the body with no size
# limit at all, so both are checked on the raw bytes first.
MAX_JSON_BYTES = 5 * 1024 * 1024
MAX_JSON_DEPTH = 32
_JSON_STRINGS = re.compile(rb'"(?:[^"\\]|\\.)*"')
_JSON_BRACKETS = re.compile(rb"[\[\]{}]")


class BadJson(ValueError):
    """A JSON body refused before or while parsing; the text says what to fix."""


def json_depth(raw: bytes) -> int:
    """How deep the brackets of `raw` nest, strings left out (a bracket inside a string is text)."""
    depth = deepest = 0
    for bracket in _JSON_BRACKETS.findall(_JSON_STRINGS.sub(b"", raw)):
        depth += 1 if bracket in (b"[", b"{") else -1
        deepest = max(deepest, depth)
    return deepest


def parse_json(raw: bytes) -> Any:
    """The document in `raw`, or BadJson: too large, nested too deep, or not JSON."""
    if len(raw) > MAX_JSON_BYTES:
        raise BadJson(f"The JSON body is larger than {MAX_JSON_BYTES // (1024 * 1024)} MB; send it in smaller batches.")
    # No body with fewer opening brackets than the limit can nest past it: most need no scan.
    if raw.count(b"[") + raw.count(b"{") > MAX_JSON_DEPTH and json_depth(raw) > MAX_JSON_DEPTH:
        raise BadJson(f"The JSON body nests more than {MAX_JSON_DEPTH} levels deep; send a flatter document.")
    try:
        return json.loads(raw or b"{}")
    except (ValueError, RecursionError) as error:
        raise BadJson(f"The body is not valid JSON ({str(error)[:80]}).") from None


class BoundedJSONParser(JSONParser):
    """DRF's JSON parser with parse_json's bounds (a 413-sized body or a deep one is a 400, not a 500)."""

    def parse(
        self, stream: IO[bytes] | None, media_type: str | None = None, parser_context: Mapping[str, Any] | None = None
    ) -> Any:
        raw = stream.read(MAX_JSON_BYTES + 1) if stream is not None else b""
        try:
            return parse_json(raw)
        except BadJson as error:
            raise ParseError(str(error)) from None


def echo(value: Any, limit: int = 40) -> str:
    """`value` as an error message may quote it: repr, cut to `limit` characters (a 49 MB value sent back
    whole in a 400 is a 49 MB answer)."""
    text = repr(value)
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


class AnonymousRateFirst(BasePermission):
    """The anonymous rate limit, counted before any refusal.

    DRF checks permissions before throttles, so an anonymous flood was answered 403 forever and never
    throttled (2026 audit). As the first permission this counts anonymous requests (AnonRateThrottle keys
    only those) and answers 429 once over the rate; logged-in users are counted by UserRateThrottle, which
    stays a throttle. A request with a bogus token is refused (401) by authentication, before permissions.
    """

    def has_permission(self, request: Request, view: Any) -> bool:
        throttle = AnonRateThrottle()
        if not throttle.allow_request(request, view):
            view.throttled(request, throttle.wait())
        return True


class _GuessThrottle(AnonRateThrottle):
    """The anonymous rate, keyed by address alone: asked while authenticating, before request.user exists."""

    def get_cache_key(self, request: Request, view: "APIView | None") -> str:
        return self.cache_format % {"scope": self.scope, "ident": self.get_ident(request)}


def _count_guess(request: Request) -> None:
    throttle = _GuessThrottle()
    if not throttle.allow_request(request, None):  # type: ignore[arg-type]  # no view yet: keyed by address
        raise Throttled(throttle.wait())


class CountedTokenAuthentication(TokenAuthentication):
    """`Authorization: Token <key>`; a made-up key counts against the address's anonymous rate before it is
    refused (401), so guessing keys is throttled like any anonymous request (issue 37: never counted)."""

    def authenticate(self, request: Request) -> tuple[Any, Any] | None:
        try:
            return super().authenticate(request)
        except AuthenticationFailed:
            _count_guess(request)
            raise


class NoBasicAuthentication(BaseAuthentication):
    """HTTP Basic is not accepted (it would hash a password for any header, outside the login's lockout); a
    script that sends it is told what to send instead, not that it sent no credentials."""

    def authenticate(self, request: Request) -> None:
        if get_authorization_header(request).split()[:1] == [b"Basic"]:
            _count_guess(request)
            raise AuthenticationFailed(
                "HTTP Basic is not accepted: send your API key as 'Authorization: Token <key>' (make one at "
                "/accounts/token/ or with manage.py api_token), or sign in."
            )
        return None

    def authenticate_header(self, request: Request) -> str:
        return "Token"  # 401, saying which scheme is
