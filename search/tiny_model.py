"""A tiny open_clip model saved in open_clip's own local-dir format.

Used where no real weights exist: the tests (which load it through the same
path users' checkpoints take) and the offline demo (which says loudly that its
rankings are meaningless). Random weights, seeded, so the same seed gives the
same model.
"""

import json
from pathlib import Path

from . import torchvision_ops  # noqa: F401  (must run before open_clip imports torchvision)

# isort: split
import open_clip
import torch
from safetensors.torch import save_file

from .spec import RANDOM_WEIGHTS_MARKER

TINY_EMBED_DIM = 64
TINY_CONFIG = {
    "embed_dim": TINY_EMBED_DIM,
    "vision_cfg": {"image_size": 64, "layers": 2, "width": 64, "head_width": 32, "patch_size": 16},
    "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 64, "heads": 2, "layers": 2},
}


def write_tiny_model(folder: Path, *, seed: int = 0, embed_dim: int = TINY_EMBED_DIM) -> str:
    """Write open_clip_config.json and open_clip_model.safetensors into `folder`; return "local-dir:<folder>"."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    torch.manual_seed(seed)
    model_config = {**TINY_CONFIG, "embed_dim": embed_dim}
    model = open_clip.CLIP(**model_config)
    config = {
        "model_cfg": model_config,
        "preprocess_cfg": {"mean": [0.48145466, 0.4578275, 0.40821073], "std": [0.26862954, 0.26130258, 0.27577711]},
    }
    (folder / "open_clip_config.json").write_text(json.dumps(config, indent=2))
    save_file(
        {name: tensor.contiguous() for name, tensor in model.state_dict().items()},
        folder / "open_clip_model.safetensors",
    )
    # Whoever configures this folder gets the "rankings are meaningless" banner.
    (folder / RANDOM_WEIGHTS_MARKER).write_text("Random weights: rankings made with this model mean nothing.\n")
    return f"local-dir:{folder}"
