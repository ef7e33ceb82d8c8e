"""Settings read from the environment, typed: a value that is not what its variable needs stops start-up with one
sentence naming the variable and what it must be (manage.py and the WSGI entry print it as one line), never a
traceback from int() and never a silent default."""

import math
import os

from django.core.exceptions import ImproperlyConfigured

TRUE = {"1", "true", "yes", "on"}
FALSE = {"0", "false", "no", "off"}


def _raw(name: str) -> str | None:
    value = os.environ.get(name)
    return None if value is None or not value.strip() else value.strip()


def env_bool(name: str, default: bool = False) -> bool:
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in TRUE | FALSE:
        return value.lower() in TRUE
    raise ImproperlyConfigured(f"{name} is {value[:40]!r}: set it to 1 or 0 (true/false, yes/no, on/off).")


def env_int(name: str, default: int, *, least: int | None = None, most: int | None = None) -> int:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = int(value, 10) if value.isascii() else None
    except ValueError:
        number = None
    _check(name, value, number, least, most, "a whole number")
    assert number is not None
    return number


def env_float(name: str, default: float, *, least: float | None = None, most: float | None = None) -> float:
    value = _raw(name)
    if value is None:
        return default
    try:
        number = float(value) if value.isascii() else None
    except ValueError:
        number = None
    if number is not None and not math.isfinite(number):
        number = None
    _check(name, value, number, least, most, "a number")
    assert number is not None
    return number


def _check(name: str, value: str, number: float | None, least: float | None, most: float | None, kind: str) -> None:
    span = (
        f" from {least} to {most}" if least is not None and most is not None
        else f" of {least} or more" if least is not None
        else f" of {most} or less" if most is not None
        else ""
    )  # fmt: skip
    if number is None or (least is not None and number < least) or (most is not None and number > most):
        raise ImproperlyConfigured(f"{name} is {value[:40]!r}: set it to {kind}{span}.")


def env_choice(name: str, default: str, choices: tuple[str, ...]) -> str:
    """One of `choices` (read in lower case), or start-up stops naming them."""
    value = _raw(name)
    if value is None:
        return default
    if value.lower() in choices:
        return value.lower()
    raise ImproperlyConfigured(f"{name} is {value[:40]!r}: set it to {', '.join(choices[:-1])} or {choices[-1]}.")


def env_list(name: str, default: str) -> list[str]:
    return [part.strip() for part in os.environ.get(name, default).split(",") if part.strip()]
