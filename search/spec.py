"""Which CLIP model is configured, and where its vectors and index live. No torch here: the
admin, the pages and every command read this without loading the model stack.

The model is named by two settings, as open_clip names it:
  QUIRE_CLIP_MODEL       e.g. "ViT-H-14-378-quickgelu" (the ViT-H/14 INQUIRE evaluated)
  QUIRE_CLIP_PRETRAINED  a pretrained tag ("dfn5b"), a checkpoint file, or "local-dir:/path"
                         (a folder with open_clip_config.json and the weights; the model
                         name is then taken from the folder and QUIRE_CLIP_MODEL is ignored)
"""

import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from common.beat import SERVER_STARTED

RANDOM_WEIGHTS_MARKER = "RANDOM_WEIGHTS"
# Set by `manage.py demo` for the development server it starts (common/beat.py names it): load the index and the text
# encoder in the background at start (search/apps.py), so the first search does not pay for them (gunicorn's
# workers do the same from quire/gunicorn_hooks.py, before they take requests).
WARM_UP_AT_START = SERVER_STARTED


@dataclass(frozen=True)
class ClipSpec:
    model: str
    pretrained: str

    @property
    def name(self) -> str:
        """The identity recorded beside stored embeddings: vectors of different models never mix."""
        if self.pretrained.startswith("local-dir:"):
            return self.pretrained
        return f"{self.model}/{self.pretrained or 'random'}"

    def open_clip_arguments(self) -> tuple[str, str | None]:
        """(model_name, pretrained) as open_clip.create_model_and_transforms takes them."""
        if self.pretrained.startswith("local-dir:"):
            return self.pretrained, None
        return self.model, self.pretrained or None

    @classmethod
    def from_name(cls, name: str) -> "ClipSpec":
        """The spec whose `name` this is (a job records the name; its workers load that model)."""
        if name.startswith("local-dir:"):
            return cls("", name)
        model, _, pretrained = name.partition("/")
        return cls(model, "" if pretrained == "random" else pretrained)

    @property
    def random_weights(self) -> bool:
        """True for a model whose weights are random on purpose (the offline demo's): its rankings mean nothing."""
        if self.pretrained.startswith("local-dir:"):
            return (Path(self.pretrained.removeprefix("local-dir:")) / RANDOM_WEIGHTS_MARKER).exists()
        return not self.pretrained


def configured_spec() -> ClipSpec:
    return ClipSpec(settings.QUIRE_CLIP_MODEL, settings.QUIRE_CLIP_PRETRAINED)


def where_configured(model_name: str) -> str:
    """Where this process's model setting came from, in a sentence for an error about `model_name`, or "" for a
    model the settings do not name (an evaluation's). The data directory's settings file is read again: a file
    written after this process started (the demo records its stand-in there) names a model this process does not
    search with, and the sentence says so."""
    spec = configured_spec()
    if model_name != spec.name:
        return ""
    names = ("QUIRE_CLIP_PRETRAINED",) if spec.pretrained.startswith("local-dir:") else SETTINGS
    if any(os.environ.get(name) for name in names):
        source = "the environment's " + " and ".join(names)
    elif spec == ClipSpec(*settings.QUIRE_CLIP_DEFAULT):
        source = f"the default (neither the environment nor {settings.DATA_DIR_SETTINGS_FILE} set a model)"
    else:
        them = "them" if len(names) > 1 else "it"
        source = f"{' and '.join(names)} as this process read {them} at start from {settings.DATA_DIR_SETTINGS_FILE}"
    said = f"this process searches with {model_name}, from {source}"
    try:
        recorded = json.loads(Path(settings.DATA_DIR_SETTINGS_FILE).read_text(encoding="utf-8"))
        now = ClipSpec(recorded.get("QUIRE_CLIP_MODEL", ""), recorded.get("QUIRE_CLIP_PRETRAINED", ""))
    except (OSError, ValueError, AttributeError):
        return said
    if now.pretrained and now.name != model_name and not any(os.environ.get(name) for name in names):
        said += f"; that file now names {now.name}: restart this process to search with it"
    return said


SETTINGS = ("QUIRE_CLIP_MODEL", "QUIRE_CLIP_PRETRAINED")


def store_root() -> Path:
    """Where the embedding stores live (one folder per model)."""
    return Path(settings.QUIRE_DATA_DIR) / "embeddings"


def index_folder(model_name: str) -> Path:
    """Where the index of one model lives (current.json points at the index file in use)."""
    return Path(settings.QUIRE_DATA_DIR) / "indexes" / model_slug(model_name)


def model_slug(model_name: str) -> str:
    """A folder name for a model name (which may be a path, for local-dir models)."""
    return re.sub(r"[^A-Za-z0-9._-]+", "_", model_name).strip("_")[:120] or "model"
