"""Loading an open_clip model and turning texts and images into L2-normalised vectors.

This module imports torch and open_clip (about 3 s): import it only where a model runs.
Which model is configured is search.spec's business (no torch there).
"""

import threading
from collections import OrderedDict
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np

from . import torchvision_ops  # noqa: F401  (must run before open_clip imports torchvision)

# isort: split
import open_clip
import torch

from .exceptions import WeightsUnavailable
from .spec import ClipSpec, configured_spec

if TYPE_CHECKING:
    from PIL.Image import Image as PILImage


def best_device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


class ClipEmbedder:
    """One loaded model. encode_* return float32 arrays of shape (n, dim), rows of unit length."""

    def __init__(self, spec: ClipSpec, *, device: str | None = None, text_cache_size: int = 4096) -> None:
        self.spec = spec
        self.device = device or best_device()
        # fp16 on the GPU halves memory and doubles throughput; CPUs are slow at fp16.
        precision = "fp16" if self.device.startswith("cuda") else "fp32"
        check_weights(spec)
        model_name, pretrained = spec.open_clip_arguments()
        try:
            self.model, _, self.preprocess = open_clip.create_model_and_transforms(
                model_name, pretrained=pretrained, device=self.device, precision=precision
            )
            self.tokenizer = open_clip.get_tokenizer(model_name)
        except Exception as error:  # open_clip raises RuntimeError, ValueError, OSError, HF errors...
            raise WeightsUnavailable(
                f"Cannot load the CLIP model {spec.name}: {str(error).splitlines()[0] if str(error) else error!r}. "
                "Set QUIRE_CLIP_PRETRAINED to a local checkpoint file or an open_clip 'local-dir:' folder "
                "(this machine may not reach the model hub)."
            ) from None
        self.model.eval()
        self.input_dtype = _input_dtype(self.model.visual)
        self._text_cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self._text_cache_size = text_cache_size
        self._lock = threading.Lock()
        self.dim = int(self.encode_text(["a photo"]).shape[1])
        size = getattr(self.model.visual, "image_size", 224)
        self.image_size = int(max(size) if isinstance(size, (tuple, list)) else size)

    @torch.inference_mode()
    def encode_text(self, texts: list[str]) -> np.ndarray:
        """Embed texts; each text's vector is cached (annotators re-run the same query often)."""
        missing = [text for text in dict.fromkeys(texts) if text not in self._text_cache]
        if missing:
            tokens = self.tokenizer(missing).to(self.device)
            vectors = _normalise(self.model.encode_text(tokens).float().cpu().numpy())
            with self._lock:
                for text, vector in zip(missing, vectors, strict=True):
                    self._text_cache[text] = vector
                    while len(self._text_cache) > self._text_cache_size:
                        self._text_cache.popitem(last=False)
        return np.stack([self._text_cache[text] for text in texts])

    @torch.inference_mode()
    def encode_pixels(self, pixels: torch.Tensor) -> np.ndarray:
        """Embed a batch already run through `self.preprocess` and stacked: (n, 3, H, W)."""
        features = self.model.encode_image(pixels.to(self.device, dtype=self.input_dtype, non_blocking=True))
        return _normalise(features.float().cpu().numpy())

    def encode_images(self, images: Iterable["PILImage"]) -> np.ndarray:
        """Embed PIL images."""
        return self.encode_pixels(torch.stack([self.preprocess(image.convert("RGB")) for image in images]))


def _input_dtype(visual: torch.nn.Module) -> torch.dtype:
    """The dtype the image tower's first layer takes. With precision="fp16" open_clip halves the convolution
    and linear weights but keeps others (the class embedding, layer norms) in fp32, so the model's first
    parameter does not say: reading it sent fp32 pixels into a half conv on every GPU."""
    for module in visual.modules():
        if isinstance(module, (torch.nn.Conv2d, torch.nn.Linear)):
            return module.weight.dtype
    return next(visual.parameters()).dtype


def check_weights(spec: ClipSpec) -> None:
    """Raise WeightsUnavailable when the weights of `spec` are not here, before building the model
    (ViT-H/14 takes seconds and gigabytes to build)."""
    model_name, pretrained = spec.open_clip_arguments()
    if model_name.startswith("local-dir:"):
        # open_clip only warns when a local-dir holds no weights and goes on with
        # random ones; a silently meaningless ranking is worse than an error.
        folder = Path(model_name.removeprefix("local-dir:"))
        if not any(any(folder.glob(pattern)) for pattern in ("*.safetensors", "*.bin", "*.pth")):
            raise WeightsUnavailable(
                f"Cannot load the CLIP model {spec.name}: no weights (*.safetensors, *.bin, *.pth) in {folder}."
            )
        return
    if not pretrained or Path(pretrained).is_file():
        return
    hub_config = open_clip.get_pretrained_cfg(model_name, pretrained)
    if not hub_config:
        tags = open_clip.list_pretrained_tags_by_model(model_name)
        raise WeightsUnavailable(
            f"Cannot load the CLIP model {spec.name}: {pretrained!r} is neither a file nor a pretrained tag of "
            f"{model_name} (its tags: {', '.join(tags) or 'none'}). Set QUIRE_CLIP_PRETRAINED to a tag, "
            "a checkpoint file, or an open_clip 'local-dir:' folder."
        )
    try:
        # Returns the cached file, or fetches it; with HF_HUB_OFFLINE=1 it fails at once.
        open_clip.download_pretrained(hub_config)
    except Exception as error:
        raise WeightsUnavailable(
            f"Cannot load the CLIP model {spec.name}: its weights are not on this machine ({type(error).__name__}). "
            "Set QUIRE_CLIP_PRETRAINED to a local checkpoint file or an open_clip 'local-dir:' folder "
            "(this machine may not reach the model hub; set HF_HUB_OFFLINE=1 to fail fast)."
        ) from None


def _normalise(vectors: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(vectors, axis=1, keepdims=True)
    unit: np.ndarray = (vectors / np.maximum(norms, 1e-12)).astype(np.float32)
    return unit


_loaded: dict[ClipSpec, ClipEmbedder] = {}
_loaded_lock = threading.Lock()


def get_embedder(spec: ClipSpec | None = None) -> ClipEmbedder:
    """The model for `spec` (default: the configured one), loaded once per process."""
    spec = spec or configured_spec()
    with _loaded_lock:
        if spec not in _loaded:
            _loaded[spec] = ClipEmbedder(spec)
        return _loaded[spec]
