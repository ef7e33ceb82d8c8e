"""Test settings: quire.settings with test-only defaults filled in before it is read.

Not a second home for settings: only values the environment would otherwise
have to supply (a secret key, a scratch data directory).
"""

import os
import tempfile
from pathlib import Path

os.environ.setdefault("SECRET_KEY", "tests-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")
os.environ.setdefault("QUIRE_DATA_DIR", tempfile.mkdtemp(prefix="quire-tests-"))
os.environ.setdefault("HF_HUB_OFFLINE", "1")
# One thread per process for OpenMP and BLAS (torch, FAISS, numpy's OpenBLAS), in every test process and what it
# starts (set before any of them is imported; xdist's workers, Celery workers and commands inherit it): the suite
# runs more test processes than cores beside the workers, servers and browsers its tests start, and each library's
# default of a thread per core oversubscribes the cores, where OpenMP's idle threads spin instead of sleeping. A
# sample of 68 tests on two workers took 3.3x the time without it (bench/RESULTS.md, "CI's time").
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
os.environ.setdefault("MKL_NUM_THREADS", "1")

from quire.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]  # fast logins in tests
# The tests speak plain HTTP to the test client and to live_server (DEBUG is off, so production's
# HTTPS defaults would redirect every request and hide the cookies from the browser).
SECURE_SSL_REDIRECT = SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = False
SECURE_HSTS_SECONDS = 0
# Django's test client logs in without a request, which django-axes refuses; the lockout tests turn it on.
AXES_ENABLED = False

if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":  # noqa: F405
    # A file, not the in-memory default: concurrency tests then meet SQLite as the demo does
    # (WAL, busy timeout, immediate transactions), not its shared-cache table locks.
    DATABASES["default"]["TEST"] = {"NAME": str(Path(QUIRE_DATA_DIR) / "test.sqlite3")}  # noqa: F405


# QUIRE_TEST_SLOW_STEPS=S (a Celery worker a fault test starts): each release step, each chunk of a map layout and
# each refresh of the completeness figures takes S seconds longer, so the test can kill the worker, its database or
# its broker half-way. Patched in the worker when its first task starts (Django is set up by then); the project's
# code has no hook for it.
_SLOW_STEPS = float(os.environ.get("QUIRE_TEST_SLOW_STEPS", "0") or 0)
if _SLOW_STEPS:
    from celery.signals import task_prerun

    @task_prerun.connect(weak=False)  # type: ignore[untyped-decorator]  # celery's signals are untyped
    def _slow_steps(**_: object) -> None:
        import time

        from annotator.progress import figures
        from annotator.releases import publish as releases
        from search import layout

        if getattr(releases, "_slowed_for_tests", False):
            return
        step, place, refresh = releases._step, layout.place, figures.refresh

        def slow_step(progress, done):  # type: ignore[no-untyped-def]
            time.sleep(_SLOW_STEPS)
            step(progress, done)

        def slow_place(fitted, vectors):  # type: ignore[no-untyped-def]
            time.sleep(_SLOW_STEPS)
            return place(fitted, vectors)

        def slow_refresh(query_ids):  # type: ignore[no-untyped-def]
            time.sleep(_SLOW_STEPS)
            refresh(query_ids)

        releases._step, layout.place, figures.refresh = slow_step, slow_place, slow_refresh
        releases._slowed_for_tests = True  # type: ignore[attr-defined]
