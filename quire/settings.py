"""Quire settings: the one home of configuration, read from the environment. Every setting read here has a row in
docs/operations.md (tests/test_docs.py checks it).

Environment variables (all optional unless stated):

DEBUG               "1"/"true" turns on Django's debug mode. Default off.
SECRET_KEY          required when DEBUG is off.
ALLOWED_HOSTS       comma-separated host names. Default "localhost,127.0.0.1".
DATABASE_URL        e.g. postgres://user:pass@host:5432/quire (psycopg 3).
                    Default: an embedded SQLite file under QUIRE_DATA_DIR.
CELERY_BROKER_URL   e.g. redis://127.0.0.1:6379/0. Unset = embedded mode:
                    background jobs run in a thread of the web process, no broker needed.
CACHE_URL           redis://... for Django's cache. Default: the broker when it is Redis, else memory.
QUIRE_DATA_DIR      images, thumbnails, embeddings, indexes. Default ./var.
QUIRE_CLIP_MODEL, QUIRE_CLIP_PRETRAINED   the open_clip model; see search/spec.py.
QUIRE_VECTOR_BACKEND faiss (default) or milvus; QUIRE_MILVUS_URI a Milvus Lite file or a server's address.

QUIRE_DATA_DIR/settings.json, when present, supplies values for the settings marked
"(file)" below that the environment leaves unset: `manage.py demo` records its choice of
model there, so that every later command run against the demo's data uses it too.
The environment always wins.
QUIRE_IMAGE_ROOTS   comma-separated folders that images roots must lie in. Default: any.
QUIRE_EMBED_CHUNK_SIZE (5000), QUIRE_EMBED_BATCH_SIZE (64), QUIRE_EMBED_LOADER_THREADS (cores, at most 8)
                    images per embedding task, per forward pass, decoding threads.
QUIRE_EMBED_LOADER_PROCESSES (0) decoding processes instead of threads, for a GPU worker.
QUIRE_SEARCH_DEVICE (auto) where searches rank: auto, cpu or cuda (search/device.py).
QUIRE_MAP_SAMPLE    (20000) images the map's t-SNE is fitted on; the others are placed beside them.
"""

import datetime
import json
import os
from pathlib import Path
from typing import Any

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from quire.env import env_bool, env_choice, env_float, env_int, env_list

BASE_DIR = Path(__file__).resolve().parent.parent


QUIRE_DATA_DIR = Path(os.environ.get("QUIRE_DATA_DIR", BASE_DIR / "var")).resolve()
DATA_DIR_SETTINGS_FILE = QUIRE_DATA_DIR / "settings.json"


def _data_dir_settings() -> dict[str, Any]:
    try:
        values = json.loads(DATA_DIR_SETTINGS_FILE.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as error:
        raise ImproperlyConfigured(f"{DATA_DIR_SETTINGS_FILE} cannot be read ({error}); fix or delete it.") from None
    if not isinstance(values, dict) or not all(isinstance(v, str) for v in values.values()):
        raise ImproperlyConfigured(f"{DATA_DIR_SETTINGS_FILE} must be a JSON object of strings; fix or delete it.")
    return values


_FROM_FILE = _data_dir_settings()


def env_or_file(name: str, default: str) -> str:
    """The environment's value, else the data directory's settings file's, else `default`."""
    value = os.environ.get(name)
    return value if value not in (None, "") else _FROM_FILE.get(name, default)


# DEBUG and SECRET_KEY (file): the demo's data directory records both, so that every command run
# against the demo works with no environment; a deployment sets them in the environment.
DEBUG = env_bool("DEBUG", _FROM_FILE.get("DEBUG", "").lower() in {"1", "true", "yes", "on"})

SECRET_KEY = env_or_file("SECRET_KEY", "").strip()
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY is not set. Set SECRET_KEY to a long random string, or set DEBUG=1 for local development "
            "(or run ./dev demo, whose data directory records both)."
        )
    SECRET_KEY = "insecure-development-key-do-not-use-in-production"
elif not DEBUG and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5):
    # Django's own measure of a weak key (check --deploy, security.W009): refused, not warned about.
    raise ImproperlyConfigured(
        "SECRET_KEY is too short or too plain: use at least 50 random characters, e.g. the output of "
        "`python -c 'import secrets; print(secrets.token_urlsafe(50))'`."
    )

ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1")

# The CLIP model (file) (see search/spec.py). Default: the ViT-H/14 INQUIRE evaluated.
QUIRE_CLIP_DEFAULT = ("ViT-H-14-378-quickgelu", "dfn5b")  # what an error names as "the default" (search/spec.py)
QUIRE_CLIP_MODEL = env_or_file("QUIRE_CLIP_MODEL", QUIRE_CLIP_DEFAULT[0])
QUIRE_CLIP_PRETRAINED = env_or_file("QUIRE_CLIP_PRETRAINED", QUIRE_CLIP_DEFAULT[1])
# Where vectors are searched (search/backends.py): "faiss", an index in each process (the default), or "milvus",
# a vector database (search/milvus.py; docs/vector-backends.md says when to switch). QUIRE_MILVUS_URI names a
# Milvus Lite file (ending .db: Milvus's server started by this process, one process at a time) or a server
# (http://host:19530, standalone or a cluster); QUIRE_MILVUS_TOKEN its "user:password" or API key;
# QUIRE_MILVUS_INDEX the index it builds (FLAT: exact; IVF_FLAT, IVF_PQ, HNSW, DISKANN, GPU_CAGRA on a server).
QUIRE_VECTOR_BACKEND = os.environ.get("QUIRE_VECTOR_BACKEND", "faiss").strip().lower()
if QUIRE_VECTOR_BACKEND not in ("faiss", "milvus"):
    raise ImproperlyConfigured(f"QUIRE_VECTOR_BACKEND is {QUIRE_VECTOR_BACKEND!r}: set it to faiss or milvus.")
QUIRE_MILVUS_URI = os.environ.get("QUIRE_MILVUS_URI", "") or str(QUIRE_DATA_DIR / "vectors.db")
QUIRE_MILVUS_TOKEN = os.environ.get("QUIRE_MILVUS_TOKEN", "")
QUIRE_MILVUS_INDEX = os.environ.get("QUIRE_MILVUS_INDEX", "FLAT").strip().upper()
QUIRE_MILVUS_TIMEOUT = env_float("QUIRE_MILVUS_TIMEOUT", 10, least=0.1)
# Images roots may only lie inside these folders (comma-separated); empty: wherever the operator's
# import commands put them. Staff cannot add roots in the admin either way.
QUIRE_IMAGE_ROOTS = env_list("QUIRE_IMAGE_ROOTS", "")
# Embedding jobs: images per Celery task, per forward pass, and decoding threads per worker.
QUIRE_EMBED_CHUNK_SIZE = env_int("QUIRE_EMBED_CHUNK_SIZE", 5000, least=1)
QUIRE_EMBED_BATCH_SIZE = env_int("QUIRE_EMBED_BATCH_SIZE", 64, least=1)
# One decoding thread per core (at most 8): on 2 cores, 2 threads kept 93% of the bare forward pass, 4 kept 91%.
QUIRE_EMBED_LOADER_THREADS = env_int("QUIRE_EMBED_LOADER_THREADS", min(8, os.cpu_count() or 1), least=1)
# Decoding processes instead of threads (0: threads). A GPU worker that embeds at 224 px needs them: threads of one
# interpreter decoded about 600 images/s on an H100's host, half of ViT-H-14's forward pass (bench/RESULTS.md). They
# start only where the task's process may have children: a worker with --pool threads or solo, or manage.py embed.
QUIRE_EMBED_LOADER_PROCESSES = env_int("QUIRE_EMBED_LOADER_PROCESSES", 0, least=0, most=256)
# Where searches rank (search/device.py): auto (a usable CUDA GPU if there is one, else the CPU), cpu, or cuda
# (start-up stops with a sentence where no GPU can be used).
QUIRE_SEARCH_DEVICE = env_choice("QUIRE_SEARCH_DEVICE", "auto", ("auto", "cpu", "cuda"))
# The map of the collection (search/layout.py): t-SNE runs on a random sample of this many images, the rest are
# placed beside their nearest sample images (20,000: about a minute on 2 cores, bench/map_layout_bench.py).
QUIRE_MAP_SAMPLE = env_int("QUIRE_MAP_SAMPLE", 20000, least=1)

INSTALLED_APPS = [
    "django.contrib.admin.apps.SimpleAdminConfig",  # admin.autodiscover() runs in quire/urls.py
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    "axes",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "django_htmx",
    "catalog",
    "annotator",
    "search",
    "lmm",
    "evaluation",
    "quire",  # project-wide commands (migrate_locked); no models
]

MIDDLEWARE = [
    "quire.middleware.ServerTiming",
    "quire.middleware.ContentSecurityPolicy",
    "quire.health.HealthCheck",  # before the host check and the HTTPS redirect (see quire/health.py)
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    # Outside every refusal below it: an htmx request's refusal becomes a sentence the page shows.
    "common.refusals.HtmxRefusals",
    "quire.middleware.RejectNulCharacters",
    "common.database.DatabaseOutage",  # a lost database: 503 with a sentence (JSON for the page and the API)
    "quire.signin.SignInLimits",  # before the session and CSRF: a refused sign-in costs no hash and no row
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Last, as django-axes asks: it turns a locked-out login into its answer.
    "axes.middleware.AxesMiddleware",
]

AUTHENTICATION_BACKENDS = [
    # First: counts failed logins and refuses a locked-out user or address before any password hashing.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
# Login attempts: 10 failures lock out that user name at that address for 15 minutes (others at the same
# address, a lab's NAT, still log in). quire/signin.py limits each address before any password is hashed:
# 20 attempts a minute, and 100 failures within the cool-off.
AXES_FAILURE_LIMIT = env_int("QUIRE_LOGIN_FAILURE_LIMIT", 10, least=1)
AXES_COOLOFF_TIME = datetime.timedelta(minutes=env_int("QUIRE_LOGIN_COOLOFF_MINUTES", 15, least=1))
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
QUIRE_LOGIN_ATTEMPTS_PER_MINUTE = env_int("QUIRE_LOGIN_ATTEMPTS_PER_MINUTE", 20, least=1)
QUIRE_LOGIN_ADDRESS_FAILURE_LIMIT = env_int("QUIRE_LOGIN_ADDRESS_FAILURE_LIMIT", 100, least=1)
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_VERBOSE = False

ROOT_URLCONF = "quire.urls"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "search.context_processors.model_warning",
            ],
        },
    },
]

WSGI_APPLICATION = "quire.wsgi.application"

DATABASES = {
    # An empty DATABASE_URL means unset, as for every other variable here.
    "default": dj_database_url.parse(
        os.environ.get("DATABASE_URL") or f"sqlite:///{QUIRE_DATA_DIR / 'quire.sqlite3'}",
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 60, least=0),
        # A kept connection is checked before a request reuses it: after a PostgreSQL restart the first query
        # of every worker would otherwise fail on a dead socket.
        conn_health_checks=True,
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    Path(DATABASES["default"]["NAME"]).parent.mkdir(parents=True, exist_ok=True)
    # Labeling is many small writes from several browser tabs: WAL mode and a
    # busy timeout keep SQLite from answering "database is locked".
    # IMMEDIATE transactions take the write lock when they begin: a transaction that read
    # first and wrote later could otherwise fail at once with "database is locked" when
    # another writer got there in between, busy timeout or not.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
        }
    )
    DATABASES["default"]["CONN_MAX_AGE"] = 0

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
# WhiteNoise serves static files from the app server (runserver with DEBUG off, gunicorn). Finders
# let it serve straight from the apps and static/ without a collectstatic step; a deployment may
# still run collectstatic into STATIC_ROOT.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG
STATICFILES_DIRS = [BASE_DIR / "static"]
# collectstatic's target, which WhiteNoise serves when filled (the docker image fills it at build time).
STATIC_ROOT = Path(os.environ.get("QUIRE_STATIC_ROOT") or QUIRE_DATA_DIR / "static")
STATIC_ROOT.mkdir(parents=True, exist_ok=True)
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    # collectstatic also writes gzip copies, which WhiteNoise sends to browsers that accept them.
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
MEDIA_ROOT = QUIRE_DATA_DIR / "media"  # uploaded evaluation runs

# HTTPS: on by default whenever DEBUG is off; each can be turned off from the environment (e.g. a
# proxy that already redirects). SECURE_PROXY_SSL_HEADER names the header a trusted proxy sets, as
# "HTTP_X_FORWARDED_PROTO,https"; leave it unset unless the proxy strips that header from clients.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", not DEBUG)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", not DEBUG)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", not DEBUG)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0 if DEBUG else 365 * 24 * 3600, least=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", not DEBUG)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", not DEBUG)
if proxy_header := os.environ.get("SECURE_PROXY_SSL_HEADER", "").strip():
    name, _, value = proxy_header.partition(",")
    if not value:
        raise ImproperlyConfigured(
            "SECURE_PROXY_SSL_HEADER must be a header and a value, e.g. HTTP_X_FORWARDED_PROTO,https"
        )
    SECURE_PROXY_SSL_HEADER = (name.strip(), value.strip())
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")
# A browser that lost every cookie is told its session ended, not that a token failed (common/refusals.py).
CSRF_FAILURE_VIEW = "common.refusals.csrf_failure"

LOGIN_URL = "/accounts/login/"
LOGIN_REDIRECT_URL = "/"

# Uploads: a CSV of 150k labels is a few MB; anything far larger is a mistake.
DATA_UPLOAD_MAX_MEMORY_SIZE = 50 * 1024 * 1024
FILE_UPLOAD_MAX_MEMORY_SIZE = 10 * 1024 * 1024

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        # No HTTP Basic: it ran the password hash (about a second of CPU) for any header, even an unknown
        # user's. A script that sends it is told what to send instead. First, so refusals answer 401 with
        # `WWW-Authenticate: Token` rather than 403.
        "common.api_params.NoBasicAuthentication",
        # Scripts send `Authorization: Token <key>` (manage.py api_token, or /accounts/token/); a made-up key
        # counts against the anonymous rate.
        "common.api_params.CountedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Anonymous requests are counted by the first permission (common.api_params.AnonymousRateFirst):
    # DRF's throttles run after the permissions, which refuse anonymous requests first.
    "DEFAULT_THROTTLE_CLASSES": ["rest_framework.throttling.UserRateThrottle"],
    "DEFAULT_THROTTLE_RATES": {
        "anon": os.environ.get("QUIRE_API_RATE_ANON", "60/minute"),
        "user": os.environ.get("QUIRE_API_RATE_USER", "6000/minute"),
    },
    "DEFAULT_PERMISSION_CLASSES": [
        "common.api_params.AnonymousRateFirst",
        "rest_framework.permissions.IsAuthenticated",
    ],
    # JSON bounded in size and depth before parsing (common/api_params.py); forms as DRF has them.
    "DEFAULT_PARSER_CLASSES": [
        "common.api_params.BoundedJSONParser",
        "rest_framework.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "DEFAULT_PAGINATION_CLASS": "common.api_params.BoundedLimitOffsetPagination",
    "PAGE_SIZE": 100,
}

SPECTACULAR_SETTINGS = {
    "TITLE": "Quire API",
    "DESCRIPTION": "Queries, taxa and images (read-only) and labels (read/write) of a Quire project.",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SERVE_PERMISSIONS": ["common.api_params.AnonymousRateFirst", "rest_framework.permissions.IsAuthenticated"],
    # The docs pages' JavaScript comes from drf-spectacular-sidecar, served with Quire's static files.
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # The schemes the schema documents: NoBasicAuthentication only refuses (with a sentence), it signs nobody in.
    "AUTHENTICATION_WHITELIST": [
        "common.api_params.CountedTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # Two value sets share the field name "value": what a request sends, and what a final label may answer.
    # Requests and answers get their own components: a label's value as sent and as answered differ (undecided).
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "common.api_schema.document_common_answers",  # 401, 429 and a cursor's 404 on every operation
    ],
    "ENUM_NAME_OVERRIDES": {
        "LabelValueEnum": "annotator.models.LabelValue",
        "FinalLabelValueEnum": "annotator.api.serializers.FINAL_LABEL_VALUES",
    },
}

CELERY_BROKER_URL = os.environ.get("CELERY_BROKER_URL", "")
# The cache (the dashboard's progress figures): Redis when CACHE_URL is set,
# or else when the broker is Redis, so that every web process of a deployment shares it; this process's
# memory otherwise (the demo).
CACHE_URL = os.environ.get("CACHE_URL", "") or (CELERY_BROKER_URL if CELERY_BROKER_URL.startswith("redis") else "")
if CACHE_URL and not CACHE_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(f"CACHE_URL must be a redis:// URL (got {CACHE_URL.split('://')[0]}://...).")
CACHES = {
    "default": (
        {
            # Django's RedisCache, but a Redis that is away is a cache miss, not a 500 (quire/cache.py).
            "BACKEND": "quire.cache.ForgivingRedisCache",
            "LOCATION": CACHE_URL,
            "KEY_PREFIX": "quire",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 1},
        }
        if CACHE_URL
        # Per process. Django's 300 entries by default would thrash: the dashboard keeps two a query (its
        # run and TSR, its estimate), and 250 queries then recomputed five queries' signals every visit.
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "OPTIONS": {"MAX_ENTRIES": 20_000}}
    )
}
# Embedded mode: no broker, tasks run in the caller's process.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = os.environ.get("CELERY_RESULT_BACKEND", CELERY_BROKER_URL or None)
# A task is acknowledged when it ends, not when it starts, and a task whose pool process was killed
# is rejected back to the queue (not acknowledged as failed): a killed process's chunk runs again.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# A whole worker killed (or its machine lost) leaves its message unacknowledged in Redis, which gives
# it back after this many seconds: longer than the longest chunk (5,000 ViT-H/14 images on a CPU take
# about 40 minutes), or a slow chunk would run twice. The reaper below recovers dead chunks sooner.
CELERY_BROKER_TRANSPORT_OPTIONS = {
    "visibility_timeout": env_int("QUIRE_TASK_VISIBILITY_TIMEOUT", 10800, least=1),
    "socket_connect_timeout": 2,
}
# A job is queued from a web request: with Redis away, give up within seconds and say so (503) rather than
# hold the page for Celery's default retries (19 s measured, mostly the result backend's 20 retries).
CELERY_BROKER_CONNECTION_TIMEOUT = 2
# A worker whose broker went away (a Redis restart) keeps trying to reconnect, however long it takes, at
# start and while running: it never gives up after Celery's default 100 tries. What kills it anyway (kombu
# raised on 1 of 10 Redis stops under load) its supervisor restarts: deploy/supervisor/quire.conf, compose.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5}
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {
    "retry_policy": {"max_retries": 1, "interval_start": 0, "interval_step": 0.5, "interval_max": 0.5},
    "socket_connect_timeout": 2,
}
CELERY_RESULT_EXPIRES = 24 * 3600
# The vision-language model that reranks (lmm/): any OpenAI-compatible chat-completions server with logprobs.
QUIRE_LMM_BASE_URL = os.environ.get("QUIRE_LMM_BASE_URL", "")  # e.g. http://127.0.0.1:8000/v1 (vLLM)
QUIRE_LMM_MODEL = os.environ.get("QUIRE_LMM_MODEL", "")
QUIRE_LMM_API_KEY = os.environ.get("QUIRE_LMM_API_KEY", "")
# The yes/no prompt, {query} standing for the query text ("\n" for a new line); empty: INQUIRE's (lmm/prompts.py).
QUIRE_LMM_PROMPT = os.environ.get("QUIRE_LMM_PROMPT", "").replace("\\n", "\n")
QUIRE_LMM_TIMEOUT = env_float("QUIRE_LMM_TIMEOUT", 60, least=0.1)
QUIRE_LMM_MAX_RETRIES = env_int("QUIRE_LMM_MAX_RETRIES", 3, least=0)
QUIRE_LMM_CONCURRENCY = env_int("QUIRE_LMM_CONCURRENCY", 4, least=1)
# The judge panel (pre-labels): a JSON list of {"model": ..., "prompt": ...}; empty: five phrasings, one model.
try:
    QUIRE_JUDGES = json.loads(os.environ.get("QUIRE_JUDGES", "") or "[]")
except ValueError as error:
    raise ImproperlyConfigured(f"QUIRE_JUDGES must be a JSON list of {{model, prompt}} objects: {error}") from None
if not isinstance(QUIRE_JUDGES, list) or not all(isinstance(j, dict) for j in QUIRE_JUDGES):
    raise ImproperlyConfigured("QUIRE_JUDGES must be a JSON list of {model, prompt} objects.")
# The text model that writes context and sub-questions (structured rerank) and rewrites queries (VisRet).
QUIRE_TEXT_MODEL_BASE_URL = os.environ.get("QUIRE_TEXT_MODEL_BASE_URL") or QUIRE_LMM_BASE_URL
QUIRE_TEXT_MODEL = os.environ.get("QUIRE_TEXT_MODEL") or QUIRE_LMM_MODEL
QUIRE_TEXT_MODEL_API_KEY = os.environ.get("QUIRE_TEXT_MODEL_API_KEY") or QUIRE_LMM_API_KEY
# The image generator VisRet draws the query with (an OpenAI-compatible images API).
QUIRE_IMAGE_MODEL_BASE_URL = os.environ.get("QUIRE_IMAGE_MODEL_BASE_URL") or QUIRE_LMM_BASE_URL
QUIRE_IMAGE_MODEL = os.environ.get("QUIRE_IMAGE_MODEL", "")
QUIRE_IMAGE_MODEL_API_KEY = os.environ.get("QUIRE_IMAGE_MODEL_API_KEY") or QUIRE_LMM_API_KEY
QUIRE_IMAGE_SIZE = os.environ.get("QUIRE_IMAGE_SIZE", "512x512")
# The labeling page re-ranks the unlabeled images below the view after this many labels (a ranking that learns).
QUIRE_RERANK_EVERY = env_int("QUIRE_RERANK_EVERY", 25, least=1)
# An uploaded example image is refused above this size.
QUIRE_MAX_EXAMPLE_BYTES = env_int("QUIRE_MAX_EXAMPLE_BYTES", 20 * 1024 * 1024, least=1)
# ...and above this much memory once decoded (a 50-megapixel photo takes 200 MB; a small file can hold far more).
QUIRE_MAX_EXAMPLE_DECODED_BYTES = env_int("QUIRE_MAX_EXAMPLE_DECODED_BYTES", 256 * 1024 * 1024, least=1)
# A running chunk with no heartbeat for this long (a batch takes seconds) is taken as dead and queued again.
QUIRE_CHUNK_STALE_SECONDS = env_int("QUIRE_CHUNK_STALE_SECONDS", 600, least=1)
# A running model job (rerank, judge panel, VisRet) with no heartbeat for this long is taken as dead and queued
# again (each answer stamps it; one model call takes seconds, a slow one a minute or two).
QUIRE_JOB_STALE_SECONDS = env_int("QUIRE_JOB_STALE_SECONDS", 300, least=1)
# `embed` gives up following a job that made no progress for this long with no worker alive.
QUIRE_EMBED_STALL_SECONDS = env_int("QUIRE_EMBED_STALL_SECONDS", 120, least=1)
# Three queues: "celery" (index builds, scoring uploaded runs, the reaper), "embed" (CLIP embedding chunks)
# and "models" (vision-language model calls). A plain `celery -A quire worker` consumes all three; with a
# GPU machine, it runs `celery -A quire worker -Q embed,models` and the CPU workers `-Q celery`.
CELERY_TASK_DEFAULT_QUEUE = "celery"
# common/background.py sends tasks by name through this app (apps import nothing of quire/).
QUIRE_CELERY_APP = "quire.celery.app"
QUIRE_TASK_QUEUES = ("celery", "embed", "models")  # made kombu Queues in quire/celery.py (kombu: 86 ms to import)
# Embedding and index builds go to the `embed` queue: on a GPU host its worker has the card (docker/compose.gpu.yml),
# where an IVF's k-means runs; a CPU deployment's workers take every queue.
CELERY_TASK_ROUTES = {
    "annotator.rerank": {"queue": "models"},
    "search.embed_chunk": {"queue": "embed"},
    "search.build_index": {"queue": "embed"},
}
# A lead time over this many seconds is a break, not work: the team report counts it as this (annotator.team.costs).
QUIRE_IDLE_CAP_SECONDS = env_int("QUIRE_IDLE_CAP_SECONDS", 60, least=1)
# How often beat's reapers look for jobs whose worker stopped: the longest a dead worker's release or map layout
# waits to be failed or taken up again (docs/operations.md).
QUIRE_REAP_SECONDS = env_int("QUIRE_REAP_SECONDS", 60, least=1)
CELERY_BEAT_SCHEDULE = {
    "requeue-stale-chunks": {"task": "search.requeue_stale_chunks", "schedule": 60.0},
    "requeue-stale-rerank-jobs": {"task": "annotator.requeue_stale_rerank_jobs", "schedule": 60.0},
    # Jobs whose worker stopped (common.held): a release fails with a sentence, a map layout or an index build is
    # sent again.
    "reap-release-jobs": {"task": "annotator.reap_release_jobs", "schedule": float(QUIRE_REAP_SECONDS)},
    "reap-search-jobs": {"task": "search.reap_jobs", "schedule": float(QUIRE_REAP_SECONDS)},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": os.environ.get("LOG_LEVEL", "WARNING")},
}
