"""The error a missing index raises names the model this process searched with and where that setting came from
(issue 64: the team demo's first run searched with the settings it started with, not the stand-in it had just
recorded, and the hint sent the user to build an index that was there)."""

import json

import pytest

from search import engine
from search.exceptions import NoIndex


def _search_fails(settings, monkeypatch, tmp_path, *, environment=None, recorded=None, started_with=None):
    settings.QUIRE_DATA_DIR = str(tmp_path)
    settings.DATA_DIR_SETTINGS_FILE = tmp_path / "settings.json"
    model, pretrained = started_with or ("ViT-H-14-378-quickgelu", "dfn5b")
    settings.QUIRE_CLIP_MODEL, settings.QUIRE_CLIP_PRETRAINED = model, pretrained
    for name in ("QUIRE_CLIP_MODEL", "QUIRE_CLIP_PRETRAINED"):
        monkeypatch.delenv(name, raising=False)
    for name, value in (environment or {}).items():
        monkeypatch.setenv(name, value)
    if recorded is not None:
        (tmp_path / "settings.json").write_text(json.dumps(recorded), encoding="utf-8")
    engine._loaded.clear()
    with pytest.raises(NoIndex) as raised:
        engine._get(f"{model}/{pretrained}" if not pretrained.startswith("local-dir:") else pretrained)
    return str(raised.value)


def test_a_file_written_after_start_is_named_with_the_way_out(settings, monkeypatch, tmp_path):
    stand_in = f"local-dir:{tmp_path}/demo/random-clip"
    said = _search_fails(settings, monkeypatch, tmp_path, recorded={"QUIRE_CLIP_PRETRAINED": stand_in})
    assert "No search index has been built for ViT-H-14-378-quickgelu/dfn5b yet" in said
    assert "the default (neither the environment nor" in said and "settings.json set a model)" in said
    assert f"that file now names {stand_in}: restart this process to search with it" in said
    assert said.endswith("run `manage.py build_index`.")


def test_the_environment_is_named_and_a_file_it_overrides_is_not(settings, monkeypatch, tmp_path):
    environment = {"QUIRE_CLIP_MODEL": "ViT-B-32", "QUIRE_CLIP_PRETRAINED": "laion2b_s34b_b79k"}
    said = _search_fails(
        settings, monkeypatch, tmp_path, environment=environment, started_with=tuple(environment.values()),
        recorded={"QUIRE_CLIP_PRETRAINED": "local-dir:/elsewhere"},
    )  # fmt: skip
    assert "this process searches with ViT-B-32/laion2b_s34b_b79k, from the environment's QUIRE_CLIP_MODEL" in said
    assert "restart" not in said  # the environment wins over the file: restarting would change nothing


def test_a_model_read_from_the_file_at_start_names_the_file(settings, monkeypatch, tmp_path):
    stand_in = f"local-dir:{tmp_path}/demo/random-clip"
    said = _search_fails(
        settings, monkeypatch, tmp_path, recorded={"QUIRE_CLIP_PRETRAINED": stand_in}, started_with=("", stand_in)
    )
    assert f"this process searches with {stand_in}, from QUIRE_CLIP_PRETRAINED as this process read it at start" in said
    assert "restart" not in said
