"""The vision-language models' one public door. Code outside lmm/ imports from here only.

    from lmm.facade import ModelUnavailable, configured_scorer, score_images, structured

The three model-based methods are reached as modules (panel, structured, visret): each is a handful of
functions and constants that annotator.rerank composes into jobs.
"""

from . import panel, structured, visret
from .chat import Progress, Scorer
from .scoring import (
    ImageInput,
    ModelUnavailable,
    configured_image_generator,
    configured_panel,
    configured_scorer,
    configured_text_model,
    score_images,
)

__all__ = [
    "ImageInput",
    "ModelUnavailable",
    "Progress",
    "Scorer",
    "configured_image_generator",
    "configured_panel",
    "configured_scorer",
    "configured_text_model",
    "panel",
    "score_images",
    "structured",
    "visret",
]
