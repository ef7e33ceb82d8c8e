"""Web workers load the index and the text encoder when they start, not on their first request (issue 27)."""

import gc
import logging
from types import SimpleNamespace

import numpy as np
import pytest

from quire import gunicorn_hooks
from search import clip, engine
from search.apps import WARM_UP_AT_START

pytestmark = pytest.mark.django_db


@pytest.fixture
def worker():
    engine._loaded.clear()
    clip._loaded.clear()
    yield SimpleNamespace(pid=7, log=logging.getLogger("gunicorn.error"))
    engine._loaded.clear()
    clip._loaded.clear()
    gc.unfreeze()  # the hook freezes what the test process holds; a worker would keep it frozen for life


def test_a_started_worker_has_the_index_and_the_text_encoder_loaded(labeling, tiny_spec, worker, caplog):
    caplog.set_level(logging.INFO)
    gunicorn_hooks.post_worker_init(worker)
    assert list(engine._loaded) == [tiny_spec.name]
    assert list(clip._loaded) == [tiny_spec]
    assert f"worker 7: search warmed up: {tiny_spec.name}'s index and text encoder are loaded" in caplog.text


def test_a_deployment_with_no_index_yet_still_starts_and_says_why(tiny_settings, worker, caplog):
    caplog.set_level(logging.INFO)
    gunicorn_hooks.post_worker_init(worker)
    assert engine._loaded == {}
    assert "search not warmed up: No search index has been built" in caplog.text


def test_warm_up_can_be_turned_off(labeling, worker, monkeypatch):
    monkeypatch.setenv("QUIRE_WARM_UP", "0")
    gunicorn_hooks.post_worker_init(worker)
    assert engine._loaded == {} and clip._loaded == {}


@pytest.mark.parametrize("warm", ["1", "0"])
def test_what_a_worker_made_at_start_is_frozen_out_of_the_collectors_walks(labeling, worker, monkeypatch, warm):
    monkeypatch.setenv("QUIRE_WARM_UP", warm)
    gc.unfreeze()
    gunicorn_hooks.post_worker_init(worker)
    assert gc.get_freeze_count() > 10_000  # Django, the test process and (warm) the index and the encoder


def test_the_demo_server_warms_up_as_it_starts(labeling, tiny_spec, worker, monkeypatch):
    import threading

    from django.apps import apps

    config = apps.get_app_config("search")
    config.ready()  # what every command does: nothing loads
    assert engine._loaded == {}
    monkeypatch.setenv(WARM_UP_AT_START, "1")  # what `manage.py demo` sets for the server it starts
    config.ready()
    (thread,) = [thread for thread in threading.enumerate() if thread.name == "quire-warm-up"]
    thread.join(timeout=120)
    assert list(engine._loaded) == [tiny_spec.name] and list(clip._loaded) == [tiny_spec]


def test_the_store_is_read_into_the_page_cache_once_warmed(tmp_path):
    from search.store import warm

    vectors = np.lib.format.open_memmap(tmp_path / "vectors.npy", mode="w+", dtype=np.float16, shape=(3000, 64))
    vectors[:] = 1
    vectors.flush()
    mapped = np.load(tmp_path / "vectors.npy", mmap_mode="r")
    done, said = warm(mapped, chunk=100_000)  # several chunks
    assert done == (tmp_path / "vectors.npy").stat().st_size and "read into the page cache" in said
    # A store larger than half the memory would only push itself out of the cache: not read.
    assert warm(mapped, memory=done) == (
        0,
        f"the store ({done / 1e9:.1f} GB) is more than half this machine's memory: not read ahead",
    )
    assert warm(np.ones((3, 4), dtype=np.float16))[0] == 0  # already in memory: nothing to read


def test_a_started_worker_reads_its_store_in_the_background(labeling, tiny_spec, worker, caplog):
    import threading

    caplog.set_level(logging.INFO)
    gunicorn_hooks.post_worker_init(worker)
    assert "its embedding store is being read into the page cache" in caplog.text
    for thread in threading.enumerate():
        if thread.name == "quire-warm-store":
            thread.join(timeout=60)
    assert f"{tiny_spec.name}: the store's" in caplog.text and "read into the page cache" in caplog.text


def test_warming_a_store_whose_index_is_gone_says_so_instead_of_raising(tiny_spec):
    """The warming thread outlives what it was started for (a rebuild moved the index, a test's data went): it
    logs why and ends, with no exception left in a thread."""
    assert "store not warmed: No search index has been built" in engine.warm_store(tiny_spec)
