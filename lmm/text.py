"""A text-only chat model for the systems that write before they look: structured rerank's context and
sub-questions, VisRet's query rewriting. Any OpenAI-compatible chat-completions server."""

from .chat import ModelUnavailable, model_errors


class TextModel:
    def __init__(
        self, *, base_url: str, model: str, api_key: str = "", timeout: float = 60.0, max_retries: int = 3
    ) -> None:
        if not base_url or not model:
            raise ModelUnavailable(
                "No text model is configured: set QUIRE_TEXT_MODEL_BASE_URL and QUIRE_TEXT_MODEL (by default the "
                "vision-language model's QUIRE_LMM_BASE_URL and QUIRE_LMM_MODEL), or paste the query's context and "
                "sub-questions in the admin."
            )
        self.base_url, self.model = base_url, model
        import openai  # here, as in lmm/chat.py: importing this module stays cheap

        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=max_retries
        )

    def complete(self, prompt: str, *, max_tokens: int = 400) -> str:
        """The model's answer to `prompt` (temperature 0). Raises ModelUnavailable."""
        with model_errors(self.base_url):
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[{"role": "user", "content": prompt}],
                max_tokens=max_tokens,
                temperature=0,
            )
        try:
            text = response.choices[0].message.content or ""
        except (AttributeError, IndexError, TypeError):
            raise ModelUnavailable(f"The text model at {self.base_url} answered without a message.") from None
        if not text.strip():
            raise ModelUnavailable(f"The text model at {self.base_url} answered with an empty message.")
        return text.strip()
