"""Web workers load the index and the text encoder when they start, not on their first request (issue 27)."""

import logging
from types import SimpleNamespace

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
