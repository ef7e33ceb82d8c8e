"""What API requests may carry: bounded paging and checked query parameters, shared by every API view.

Kept apart from the views: DRF's settings import the pagination class from here while its own
view classes are still loading.
"""

from drf_spectacular.utils import OpenApiResponse
from rest_framework import serializers
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination, LimitOffsetPagination


class BoundedLimitOffsetPagination(LimitOffsetPagination):
    """?limit=&offset= paging with both bounded: a limit over max_limit is cut to it, and an offset
    past what the database can count is refused (400) instead of reaching it."""

    default_limit = 100
    max_limit = 1000

    def get_offset(self, request):
        int_param(request, self.offset_query_param, high=BIGINT)  # 400 when malformed or too large
        return super().get_offset(request)

    def get_limit(self, request):
        int_param(request, self.limit_query_param, high=BIGINT)
        return super().get_limit(request)


class ByIdCursorPagination(CursorPagination):
    """Paging without COUNT(*): a count over 5M images costs more than the page itself."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


BIGINT = 2**63  # the database's whole numbers end here: a larger one must be refused, not sent


def int_param(request, name, *, high: int = BIGINT):
    """A whole-number query parameter (ASCII digits, below `high`), None when absent; otherwise 400."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    if not (value.isascii() and value.isdigit()) or int(value) >= high:
        raise ValidationError({name: f"must be a whole number from 0 to {high - 1}, not {value[:40]!r}"})
    return int(value)


def int_list_param(request, name, *, high: int = BIGINT) -> list[int]:
    """A repeatable whole-number query parameter (?image=1&image=2); 400 for any malformed value."""
    values = request.query_params.getlist(name)
    if not all(value.isascii() and value.isdigit() and int(value) < high for value in values):
        raise ValidationError({name: f"must be whole numbers from 0 to {high - 1}"})
    return [int(value) for value in values]


def choice_param(request, name, choices):
    """A query parameter that must be one of `choices`, None when absent; otherwise 400."""
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    if value not in choices:
        raise ValidationError({name: f"must be one of {', '.join(choices)}, not {value[:40]!r}"})
    return value


def text_param(request, name, *, max_length: int = 200) -> str:
    """A free-text query parameter: no NUL character (databases refuse it), at most `max_length` characters."""
    value = request.query_params.get(name, "").strip()
    if "\x00" in value:
        raise ValidationError({name: "must not contain a NUL character"})
    if len(value) > max_length:
        raise ValidationError({name: f"must be at most {max_length} characters"})
    return value


def strict_id(value) -> int | None:
    """An id as a request carries it: a JSON whole number or a string of ASCII digits (form posts),
    0 to 2^63 - 1; None for anything else (1.5 or true is not image 1)."""
    if isinstance(value, str) and value.isascii() and value.isdigit():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < BIGINT:
        return None
    return value


class StrictPrimaryKeyRelatedField(serializers.PrimaryKeyRelatedField):
    """A primary key that must be a strict_id."""

    def to_internal_value(self, data):
        if strict_id(data) is None:
            self.fail("incorrect_type", data_type=type(data).__name__)
        return super().to_internal_value(strict_id(data))


# What list endpoints answer when a parameter is wrong, for the OpenAPI schema.
BAD_PARAMETERS = {400: OpenApiResponse(description="A parameter is malformed; the body names it and says why.")}
NOT_FOUND = {404: OpenApiResponse(description="No such object.")}
