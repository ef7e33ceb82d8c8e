import json
import os
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.management import call_command

from annotator.models import Query
from tests.factories import make_collection

# Fixtures that start a process (a Celery worker, a Redis server, a live server with Chromium): a test using
# one is `slow`. Tests that run a command as its own process are marked where they are written.
PROCESS_FIXTURES = {
    *("start_worker", "worker", "broker", "broker_on", "cache_on", "live_server", "page", "browser"),
    *("milvus_server", "milvus_server_uri"),
}


def pytest_collection_modifyitems(config, items):
    """Marks the tests that start processes `slow`; tests marked `postgresql` skip, saying why, when the suite
    runs on SQLite (CI runs them on PostgreSQL)."""
    from django.conf import settings

    for item in items:
        if PROCESS_FIXTURES & set(getattr(item, "fixturenames", ())):
            item.add_marker(pytest.mark.slow)

    if settings.DATABASES["default"]["ENGINE"].endswith("postgresql"):
        return
    skip = pytest.mark.skip(reason="needs PostgreSQL: set DATABASE_URL (as .ci/run does)")
    for item in items:
        if "postgresql" in item.keywords:
            item.add_marker(skip)


SHARED_INQUIRE = Path(__file__).resolve().parents[1].parent / "shared" / "data" / "inquire"


@pytest.fixture(autouse=True)
def _background_jobs_end_with_their_test():
    """A job a test's request sent to the embedded background thread finishes before the next test starts:
    otherwise it runs against the next test's database, and the next test's own job (the same task and
    arguments) is taken for it and never runs."""
    yield
    from common import background

    background.wait_for_all(timeout=120)


@pytest.fixture(autouse=True)
def _sign_in_counts_start_at_zero():
    """Each test signs in as if it were the first from its address. quire/signin.py counts sign-ins per
    address in the cache, which outlives a test: the browser tests sign in from 127.0.0.1 more than the 20 a
    minute a person may, and were refused (429) whenever nothing else happened to evict the count."""
    from django.core.cache import cache

    addresses = ("127.0.0.1", "::1", "localhost")
    cache.delete_many([f"signin:{kind}:{address}" for kind in ("attempts", "failures") for address in addresses])


@pytest.fixture
def inquire_dir() -> Path:
    """The released INQUIRE files in ../shared (never copied into the project)."""
    if not (SHARED_INQUIRE / "inquire_queries_val.csv").exists():
        pytest.skip(f"the released INQUIRE files are not at {SHARED_INQUIRE} (../shared is absent)")
    return SHARED_INQUIRE


@pytest.fixture
def write_json(tmp_path):
    def write(document, name="train.json") -> Path:
        path = tmp_path / name
        path.write_text(json.dumps(document))
        return path

    return write


@pytest.fixture(scope="session")
def tiny_model_dir(tmp_path_factory):
    """The tiny open_clip model in local-dir format, written once per test run."""
    from search.tiny_model import write_tiny_model

    return write_tiny_model(tmp_path_factory.mktemp("tiny-clip"))


@pytest.fixture
def tiny_settings(settings, tmp_path, tiny_model_dir):
    """Settings for a search test: the tiny model and a fresh data directory."""
    settings.QUIRE_DATA_DIR = tmp_path / "data"
    settings.QUIRE_CLIP_PRETRAINED = tiny_model_dir
    settings.QUIRE_EMBED_BATCH_SIZE = 4
    settings.QUIRE_EMBED_CHUNK_SIZE = 5
    return settings


@pytest.fixture
def tiny_spec(tiny_settings):
    """The tiny model's spec, as search functions take it."""
    from search.spec import ClipSpec

    return ClipSpec(tiny_settings.QUIRE_CLIP_MODEL, tiny_settings.QUIRE_CLIP_PRETRAINED)


@pytest.fixture
def labeling(tiny_settings, tmp_path):
    """A collection of 120 embedded and indexed images, a query, an annotator and an admin."""
    make_collection(tmp_path / "images", 120)
    # One chunk: the same embeddings (the batch size is tiny_settings'), a third of the time of 24 chunks of 5; this
    # fixture sets up about 180 tests. The tests of chunks and their resumption embed with tiny_settings' 5.
    call_command("embed", chunk_size=120)
    query = Query.objects.create(text="Black Skimmer performing skimming", supercategory="Birds", category="Feeding")
    User = get_user_model()
    annotator = User.objects.create_user("ann", password="pw-ann-1")
    admin = User.objects.create_superuser("boss", "boss@example.org", "pw-boss-1")
    return {"query": query, "annotator": annotator, "admin": admin, "images": tmp_path / "images"}


@pytest.fixture(scope="session")
def milvus_server(tmp_path_factory):
    """The address of a real Milvus standalone server: QUIRE_TEST_MILVUS_URI's when set (a server already
    running), else one started from PyPI's `milvus` package on free loopback ports, its data in a temporary folder,
    stopped by its PID when the session ends. Skips, saying why, only when that package cannot start."""
    from bench import milvus_server as server  # only the Milvus tests need it

    if os.environ.get("QUIRE_TEST_MILVUS_URI"):
        yield os.environ["QUIRE_TEST_MILVUS_URI"]
        return
    try:
        with server.running(tmp_path_factory.mktemp("milvus-server"), next_target_every=1, stop_grace=3) as running:
            yield running.uri
    except server.ServerUnavailable as error:
        if os.environ.get("QUIRE_REQUIRE_SERVICES") == "1":
            pytest.fail(f"QUIRE_REQUIRE_SERVICES=1 and no Milvus server started: {error}")
        pytest.skip(f"no Milvus server to test against: {error}")


@pytest.fixture
def milvus_server_uri(milvus_server, settings):
    """QUIRE_MILVUS_URI pointed at the test server for one test; the collections it made are dropped after it
    (only those: a server named by QUIRE_TEST_MILVUS_URI may hold others')."""
    from pymilvus import MilvusClient  # only the Milvus tests need it

    settings.QUIRE_MILVUS_URI = milvus_server
    client = MilvusClient(uri=milvus_server, timeout=30)
    before = set(client.list_collections())
    yield milvus_server
    for name in set(client.list_collections()) - before:
        client.drop_collection(name)
    client.close()
