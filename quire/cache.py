"""Django's Redis cache, answering as an empty cache while Redis is away.

What Quire caches can always be recomputed (the dashboard's completeness figures) or done without (the API's
throttle counts), so a Redis restart must not turn home, the labeling page and the dashboards into 500s, as
Django's RedisCache does by raising redis' ConnectionError. Reads miss, writes are dropped, and one warning a
minute says so in the log. Short socket timeouts (settings) keep a dead Redis from holding each request.
"""

import logging
import time

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


class ForgivingRedisCache(RedisCache):
    def get(self, key, default=None, version=None):
        try:
            return super().get(key, default, version)
        except _REDIS_AWAY as error:
            _away(error)
            return default

    def get_many(self, keys, version=None):
        try:
            return super().get_many(keys, version)
        except _REDIS_AWAY as error:
            _away(error)
            return {}

    def has_key(self, key, version=None):
        try:
            return super().has_key(key, version)
        except _REDIS_AWAY as error:
            _away(error)
            return False

    def set(self, key, value, timeout=None, version=None):
        try:
            super().set(key, value, timeout, version)
        except _REDIS_AWAY as error:
            _away(error)

    def add(self, key, value, timeout=None, version=None):
        try:
            return super().add(key, value, timeout, version)
        except _REDIS_AWAY as error:
            _away(error)
            return False

    def set_many(self, data, timeout=None, version=None):
        try:
            return super().set_many(data, timeout, version)
        except _REDIS_AWAY as error:
            _away(error)
            return list(data)

    def touch(self, key, timeout=None, version=None):
        try:
            return super().touch(key, timeout, version)
        except _REDIS_AWAY as error:
            _away(error)
            return False

    def delete(self, key, version=None):
        try:
            return super().delete(key, version)
        except _REDIS_AWAY as error:
            _away(error)
            return False

    def delete_many(self, keys, version=None):
        try:
            super().delete_many(keys, version)
        except _REDIS_AWAY as error:
            _away(error)
