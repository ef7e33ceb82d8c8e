"""The offline demo's model: the configured one when its weights are here, else a tiny random-weight one.

A demo with no network cannot fetch ViT-H/14. Rather than show no ranking at
all it uses a random-weight model, marked so that every page and command says
its rankings are meaningless until real weights are configured.
"""
import os
from pathlib import Path

from django.conf import settings

from .clip import ClipSpec, WeightsUnavailable, check_weights, configured_spec
from .tiny_model import write_tiny_model


def demo_model(data_dir: Path) -> tuple[ClipSpec, str | None]:
    """Configure the model the demo will use; return it and, when it is the random stand-in, why."""
    spec = configured_spec()
    try:
        check_weights(spec)
        return spec, None
    except WeightsUnavailable as error:
        reason = str(error)
    folder = Path(data_dir) / "demo" / "random-clip"
    if not (folder / "open_clip_config.json").exists():
        write_tiny_model(folder)
    pretrained = f"local-dir:{folder}"
    settings.QUIRE_CLIP_PRETRAINED = pretrained
    os.environ["QUIRE_CLIP_PRETRAINED"] = pretrained  # for anything the demo starts after this
    return configured_spec(), reason
