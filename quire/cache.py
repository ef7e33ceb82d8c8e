"""Django's Redis cache, answering as an empty cache while Redis is away.

What Quire caches can always be recomputed (the dashboard's completeness figures) or done without (the API's
throttle counts), so a Redis restart must not turn home, the labeling page and the dashboards into 500s, as
Django's RedisCache does by raising redis' ConnectionError. Reads miss, writes are dropped, and one warning a
minute says so in the log. Short socket timeouts (settings) keep a dead Redis from holding each request.
"""

import logging
import time
from collections.abc import Callable
from functools import wraps
from typing import Any

from django.core.cache.backends.redis import RedisCache
from redis.exceptions import ConnectionError, TimeoutError

log = logging.getLogger(__name__)
_REDIS_AWAY = (ConnectionError, TimeoutError)
_last_warning = 0.0


def _away(error: Exception) -> None:
    global _last_warning
    if time.monotonic() - _last_warning > 60:
        _last_warning = time.monotonic()
        log.warning("the cache (Redis) is not answering; serving without it: %s", error)


def _forgiving(name: str, answer_while_away: Callable[..., Any]) -> Callable[..., Any]:
    """RedisCache's method `name`, answering `answer_while_away(*arguments)` while Redis is away; that
    function takes the method's own arguments, so get() can give back its caller's default."""
    method = getattr(RedisCache, name)

    @wraps(method)
    def forgiving(self: RedisCache, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except _REDIS_AWAY as error:
            _away(error)
            return answer_while_away(*args, **kwargs)

    return forgiving


class ForgivingRedisCache(RedisCache):
    # Reads miss; writes are dropped (set_many names every key it could not set, as Django's API says).
    get = _forgiving("get", lambda key, default=None, version=None: default)
    get_many = _forgiving("get_many", lambda keys, version=None: {})
    has_key = _forgiving("has_key", lambda key, version=None: False)
    set = _forgiving("set", lambda key, value, timeout=None, version=None: None)
    add = _forgiving("add", lambda key, value, timeout=None, version=None: False)
    set_many = _forgiving("set_many", lambda data, timeout=None, version=None: list(data))
    touch = _forgiving("touch", lambda key, timeout=None, version=None: False)
    incr = _forgiving("incr", lambda key, delta=1, version=None: 0)  # a sign-in count of 0: not counted
    delete = _forgiving("delete", lambda key, version=None: False)
    delete_many = _forgiving("delete_many", lambda keys, version=None: None)
