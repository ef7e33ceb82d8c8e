"""Image generation over the OpenAI-compatible images API (POST /v1/images/generations), for VisRet:
OpenAI's image models, or a local diffusion server that speaks the same format (e.g. LocalAI)."""

import base64
import binascii

from .chat import ModelUnavailable, model_errors


class ImageGenerator:
    def __init__(
        self, *, base_url: str, model: str, api_key: str = "", size: str = "512x512", timeout: float = 120.0
    ) -> None:
        if not base_url or not model:
            raise ModelUnavailable(
                "No image generator is configured: set QUIRE_IMAGE_MODEL_BASE_URL and QUIRE_IMAGE_MODEL "
                "(an OpenAI-compatible images API)."
            )
        self.base_url, self.model, self.size = base_url, model, size
        import openai  # here, as in lmm/chat.py: importing this module stays cheap

        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=2)

    def generate(self, prompt: str, n: int = 3) -> list[bytes]:
        """`n` images (encoded bytes, usually PNG) for `prompt`. Raises ModelUnavailable."""
        with model_errors(self.base_url):
            response = self.client.images.generate(
                model=self.model, prompt=prompt, n=n, size=self.size, response_format="b64_json"
            )
        try:
            encoded: list[str] = [item.b64_json for item in response.data]  # type: ignore[misc,union-attr]  # checked below
            images = [base64.b64decode(text, validate=True) for text in encoded]
        except (AttributeError, TypeError, binascii.Error):
            raise ModelUnavailable(f"The image generator at {self.base_url} answered without base64 images.") from None
        if len(images) != n:
            raise ModelUnavailable(f"The image generator at {self.base_url} made {len(images)} images, not {n}.")
        return images
