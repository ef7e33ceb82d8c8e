"""Template context every page gets from the search engine."""

from functools import lru_cache

from django.http import HttpRequest

from .spec import ClipSpec, configured_spec


def model_warning(request: HttpRequest) -> dict[str, str]:
    """A banner when the configured model has random weights (the offline demo's): its rankings mean nothing."""
    spec = configured_spec()
    if _is_random(spec):
        return {
            "model_warning": f"The CLIP model ({spec.name}) has random weights: rankings are meaningless "
            "until real weights are configured (QUIRE_CLIP_PRETRAINED)."
        }
    return {}


@lru_cache(maxsize=8)
def _is_random(spec: ClipSpec) -> bool:  # a stat per spec and process, not per request
    return spec.random_weights
