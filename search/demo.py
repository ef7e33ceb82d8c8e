"""The offline demo's model: the configured one when its weights are here, else a tiny random-weight one.

A demo with no network cannot fetch ViT-H/14. Rather than show no ranking at
all it uses a random-weight model, marked so that every page and command says
its rankings are meaningless until real weights are configured. Nothing here
changes settings: the demo command records the choice in the data directory's
settings file, which quire/settings.py reads at start-up.
"""

import shutil
from pathlib import Path

from .exceptions import WeightsUnavailable
from .spec import ClipSpec, configured_spec


def demo_model(data_dir: Path) -> tuple[ClipSpec, str | None]:
    """Return the model the demo will use and, when it is the random stand-in, why."""
    from .clip import check_weights  # open_clip and torch: only when the demo prepares its model
    from .tiny_model import write_tiny_model  # (likewise)

    spec = configured_spec()
    try:
        check_weights(spec)
        return spec, None
    except WeightsUnavailable as error:
        reason = str(error)
    folder = Path(data_dir) / "demo" / "random-clip"
    if not folder.is_dir():
        # Written beside its final name and renamed whole: an interrupted demo never leaves a
        # folder with a config and no weights (which check_weights would then refuse forever).
        partial = folder.with_name(f"{folder.name}.partial")
        shutil.rmtree(partial, ignore_errors=True)
        write_tiny_model(partial)
        partial.replace(folder)
    return ClipSpec(spec.model, f"local-dir:{folder}"), reason
