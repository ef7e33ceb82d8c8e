"""Parsing one field of an imported record, with an error that names the field."""

import datetime
import math
from typing import Any

from common.formats import IMAGE_EXTENSIONS
from common.inputs import WHOLE_NUMBER, not_a_whole_number


class BadValue(ValueError):
    """A field's value cannot be used; the text says which field and why."""


# The database's whole numbers: BigIntegerField by default, IntegerField where a column is 32-bit.
INT64 = (-(2**63), 2**63 - 1)
INT32 = (-(2**31), 2**31 - 1)


def required_int(value: Any, field: str, bounds: tuple[int, int] = INT64) -> int:
    result = optional_int(value, field, bounds)
    if result is None:
        raise BadValue(f"{field} is missing")
    return result


def optional_int(value: Any, field: str, bounds: tuple[int, int] = INT64) -> int | None:
    """A whole number within `bounds` (inclusive), None when empty. A number past the bounds would fail
    in the database ("bigint out of range"), so it is refused here with the field's name."""
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise BadValue(f"{field} must be a whole number, not {value!r}")
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not isinstance(value, int):
        text = str(value).strip()
        if not WHOLE_NUMBER.fullmatch(text):
            raise BadValue(not_a_whole_number(field, text))
        value = int(text)
    low, high = bounds
    if not low <= value <= high:
        raise BadValue(f"{field} must be a whole number from {low} to {high}, not {value}")
    return int(value)


def optional_float(value: Any, field: str, *, low: float | None = None, high: float | None = None) -> float | None:
    if value is None or value == "":
        return None
    if isinstance(value, bool):
        raise BadValue(f"{field} must be a number, not {value!r}")
    try:
        result = float(value)
    except (TypeError, ValueError):
        raise BadValue(f"{field} must be a number, not {value!r}") from None
    if math.isnan(result) or math.isinf(result):
        raise BadValue(f"{field} must be a finite number, not {value!r}")
    if (low is not None and result < low) or (high is not None and result > high):
        raise BadValue(f"{field} must be between {low} and {high}, not {value!r}")
    return result


def optional_text(value: Any, field: str, max_length: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise BadValue(f"{field} must be text, not {value!r}")
    if len(value) > max_length:
        raise BadValue(f"{field} is longer than {max_length} characters")
    if "\x00" in value:
        raise BadValue(f"{field} contains a NUL character")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:  # a JSON "\\ud800" escape with no pair: not text any database can store
        raise BadValue(f"{field} contains a lone surrogate (an unpaired \\ud800-\\udfff escape)") from None
    return value


def required_text(value: Any, field: str, max_length: int) -> str:
    """Text that must not be blank. Kept exactly as given (the released INQUIRE
    files have a trailing space in a query text, and exports must reproduce it)."""
    result = optional_text(value, field, max_length)
    if not result.strip():
        raise BadValue(f"{field} is missing")
    return result


def optional_date(value: Any, field: str) -> datetime.date | None:
    """iNat dates look like "2010-07-23 00:00:00+00:00" or "2010-07-23"; the day is kept."""
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise BadValue(f"{field} must be a date like 2021-04-22, not {value!r}")
    try:
        return datetime.date.fromisoformat(value.strip()[:10])
    except ValueError:
        raise BadValue(f"{field} must be a date like 2021-04-22, not {value!r}") from None


def image_file_name(value: Any, field: str) -> str:
    """A path to an image file: at most 1,024 characters, ending like a JPEG, PNG, WebP or GIF file. Quire
    never serves another kind of file (an .svg or .html file would run script on its pages)."""
    name = required_text(value, field, 1024)
    if not name.lower().endswith(IMAGE_EXTENSIONS):
        raise BadValue(f"{field} {name[:200]!r} is not a JPEG, PNG, WebP or GIF file; Quire imports only those")
    return name
