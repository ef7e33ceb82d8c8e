"""Sign-in limits that act before any password is hashed.

django-axes locks a (user name, address) pair after QUIRE_LOGIN_FAILURE_LIMIT failures: one person's typos
at a shared address (a lab, a university NAT) lock out nobody else. That alone would let one address try
every user name in turn, and each try costs a password hash (PBKDF2, about a second of a core): the 2026
audit's 50 wrong logins at once made 28 of 43 concurrent label saves time out. So this middleware refuses
sign-in POSTs from an address before the view runs (before hashing) when that address has

- sent more than QUIRE_LOGIN_ATTEMPTS_PER_MINUTE sign-in attempts in the last minute, or
- failed QUIRE_LOGIN_ADDRESS_FAILURE_LIMIT times (much higher than the per-user limit) within the cool-off.

Counts live in the cache (Redis in a deployment, shared by every web process). While Redis is away the
counts read as zero and only axes' per-pair lockout (in the database) applies.
"""

from collections.abc import Callable
from typing import Any

from axes.helpers import get_client_ip_address
from django.conf import settings
from django.contrib.auth.signals import user_logged_in, user_login_failed
from django.core.cache import cache
from django.dispatch import receiver
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

SIGN_IN_PATHS = frozenset({settings.LOGIN_URL, "/admin/login/"})


def _count(key: str, window_seconds: int) -> int:
    """Adds one to a counter that expires `window_seconds` after its first count; the new value."""
    if cache.add(key, 1, window_seconds):
        return 1
    try:
        return cache.incr(key)
    except ValueError:  # expired between add and incr
        cache.set(key, 1, window_seconds)
        return 1


def _cooloff_seconds() -> int:
    return int(settings.AXES_COOLOFF_TIME.total_seconds())


@receiver(user_login_failed)
def count_failure_per_address(
    sender: Any, credentials: dict[str, Any], request: HttpRequest | None = None, **kwargs: Any
) -> None:
    if request is not None:
        _count(f"signin:failures:{get_client_ip_address(request)}", _cooloff_seconds())


@receiver(user_logged_in)
def give_back_a_successful_attempt(
    sender: Any, request: HttpRequest | None = None, user: Any = None, **kwargs: Any
) -> None:
    """A sign-in that succeeded gives its attempt back: the per-minute limit is for guessing, and a lab's
    twenty-first colleague signing in behind one NAT at nine was refused (issue 37)."""
    if request is None or request.method != "POST":
        return
    key = f"signin:attempts:{get_client_ip_address(request)}"
    try:
        if cache.decr(key) < 0:
            cache.set(key, 0, 60)
    except ValueError:  # the count expired meanwhile: nothing to give back
        pass


def refusal(request: HttpRequest) -> tuple[str, str] | None:
    """Why a sign-in from this request's address is refused now and how long to wait, or None. Counts the
    attempt."""
    address = get_client_ip_address(request)
    if (cache.get(f"signin:failures:{address}") or 0) >= settings.QUIRE_LOGIN_ADDRESS_FAILURE_LIMIT:
        return "This address has failed to log in too many times.", f"{_cooloff_seconds() // 60} minutes"
    if _count(f"signin:attempts:{address}", 60) > settings.QUIRE_LOGIN_ATTEMPTS_PER_MINUTE:
        return "This address has tried to log in too often.", "a minute"
    return None


class SignInLimits:
    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        if request.method == "POST" and request.path in SIGN_IN_PATHS and (refused := refusal(request)):
            reason, wait = refused
            return render(request, "registration/locked_out.html", {"reason": reason, "wait": wait}, status=429)
        return self.get_response(request)
