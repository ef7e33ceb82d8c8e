"""The yes/no relevance scorer over an OpenAI-compatible chat-completions API: OpenAI, vLLM and Ollama
speak the same wire format, so one client serves all three.

One request per (query, image): the image as a data URL, max_tokens 1, temperature 0, logprobs with
the 20 most likely first tokens (INQUIRE's settings), scored by yesno.from_top_logprobs. The official
`openai` client does the HTTP: timeouts, and retries with exponential back-off on connection errors,
429 and 5xx (honouring Retry-After). A thread pool bounds how many requests are in flight.
"""

import base64
import threading
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor, as_completed
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, Protocol, cast

from . import prompts, yesno


class ModelUnavailable(Exception):
    """The model server could not give an answer; the text says what to check."""


@dataclass
class Usage:
    """What a scorer spent: requests sent, tokens billed (as the server reports them)."""

    requests: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    doubtful: int = 0  # answers whose p(Yes) + p(No) was under 0.9
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def add(self, response: Any, answer: yesno.YesNo) -> None:  # an openai ChatCompletion
        """Count one chat-completions answer, with the tokens its server reported."""
        usage = getattr(response, "usage", None)
        self.count(getattr(usage, "prompt_tokens", 0) or 0, getattr(usage, "completion_tokens", 0) or 0, answer)

    def count(self, prompt_tokens: int, completion_tokens: int, answer: yesno.YesNo) -> None:
        with self._lock:
            self.requests += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.doubtful += answer.doubtful


@dataclass(frozen=True)
class ImageInput:
    data: bytes
    content_type: str  # image/jpeg, image/png, ...

    def data_url(self) -> str:
        return f"data:{self.content_type};base64,{base64.b64encode(self.data).decode('ascii')}"


# on_answer(index, answer): called as each of ask_many's answers arrives. Progress(done, total): after each.
OnAnswer = Callable[[int, yesno.YesNo], None]
Progress = Callable[[int, int], None]


class Scorer(Protocol):
    """What asks a vision-language model a yes/no question about an image: a model server's (ChatScorer) or
    a local model's (lmm/local.py)."""

    prompt: str
    usage: "Usage"

    @property
    def name(self) -> str: ...

    def ask_prompt(self, prompt: str, image: "ImageInput") -> yesno.YesNo: ...

    def ask_many(
        self, questions: Sequence[tuple[str, "ImageInput"]], on_answer: OnAnswer | None = None
    ) -> list[yesno.YesNo]: ...


class ChatScorer:
    """P(yes) for (query, image) pairs from a chat model that returns logprobs."""

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str = "",
        prompt: str = prompts.CHAT,
        timeout: float = 60.0,
        max_retries: int = 3,
        concurrency: int = 4,
    ) -> None:
        if not base_url or not model:
            raise ModelUnavailable(
                "No vision-language model is configured: set QUIRE_LMM_BASE_URL (e.g. http://127.0.0.1:8000/v1 "
                "for vLLM, http://127.0.0.1:11434/v1 for Ollama, https://api.openai.com/v1) and QUIRE_LMM_MODEL."
            )
        prompts.render(prompt, "")  # a prompt without {query} is refused here, not on the first image
        self.base_url, self.model, self.prompt = base_url, model, prompt
        self.concurrency = max(1, concurrency)
        import openai  # here: the labeling pages import this module, and commands should not pay for it

        # A key is required by the client even where the server needs none (vLLM, Ollama).
        self.client = openai.OpenAI(
            base_url=base_url, api_key=api_key or "unused", timeout=timeout, max_retries=max_retries
        )
        self.usage = Usage()

    @property
    def name(self) -> str:
        """What the cache and the stored scores are keyed by."""
        return self.model

    def ask(self, query: str, image: ImageInput) -> yesno.YesNo:
        """The configured yes/no question about `query`, for one image. Raises ModelUnavailable."""
        return self.ask_prompt(prompts.render(self.prompt, query), image)

    def ask_prompt(self, prompt: str, image: ImageInput) -> yesno.YesNo:
        """One request with a prompt written in full (structured rerank's sub-questions)."""
        with model_errors(self.base_url):
            response = self.client.chat.completions.create(
                model=self.model,
                messages=[
                    {
                        "role": "user",
                        "content": [
                            {"type": "text", "text": prompt},
                            {"type": "image_url", "image_url": {"url": image.data_url()}},
                        ],
                    }
                ],
                max_tokens=1,
                temperature=0,
                logprobs=True,
                top_logprobs=20,
            )
        answer = yesno.from_top_logprobs(_first_token_alternatives(response, self.base_url))
        self.usage.add(response, answer)
        return answer

    def ask_many(
        self, questions: Sequence[tuple[str, ImageInput]], on_answer: OnAnswer | None = None
    ) -> list[yesno.YesNo]:
        """Ask each (prompt, image), at most `concurrency` at once; `on_answer(index, answer)` is called in
        the caller's thread as each arrives (so that the caller can store every answer, with its own
        database connection, even when a later one fails). Raises ModelUnavailable for the first
        failure, after the requests in flight have finished."""
        results: list[yesno.YesNo | None] = [None] * len(questions)
        failure = None
        with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
            futures = {pool.submit(self.ask_prompt, *question): index for index, question in enumerate(questions)}
            for future in as_completed(futures):
                if future.exception() is not None:
                    failure = failure or future.exception()
                    continue
                results[futures[future]] = future.result()
                if on_answer:
                    on_answer(futures[future], future.result())
        if failure is not None:
            raise failure
        return cast(list[yesno.YesNo], results)  # every one answered, or the failure was raised above


@contextmanager
def model_errors(base_url: str) -> Iterator[None]:
    """Turn the client's exceptions into ModelUnavailable sentences that say what to check."""
    import openai

    try:
        yield
    except openai.APITimeoutError:
        raise ModelUnavailable(
            f"The model server at {base_url} did not answer in time (QUIRE_LMM_TIMEOUT); is it overloaded?"
        ) from None
    except openai.RateLimitError:
        raise ModelUnavailable(
            f"The model server at {base_url} kept answering 429 (too many requests) after the retries: "
            "lower QUIRE_LMM_CONCURRENCY or wait."
        ) from None
    except openai.APIConnectionError:
        raise ModelUnavailable(f"The model server at {base_url} cannot be reached: is it running?") from None
    except openai.APIStatusError as error:
        body = error.body if isinstance(error.body, dict) else {}
        message = _short(body.get("message") or error.message)
        raise ModelUnavailable(f"The model server at {base_url} answered {error.status_code}: {message}") from None
    except (openai.OpenAIError, ValueError) as error:
        raise ModelUnavailable(
            f"The model server at {base_url} answered something unreadable: {_short(error)}"
        ) from None


def _first_token_alternatives(response: Any, base_url: str) -> list[tuple[str, float]]:
    try:
        content = response.choices[0].logprobs.content
        return [(item.token, float(item.logprob)) for item in content[0].top_logprobs]
    except (AttributeError, IndexError, TypeError, ValueError):
        raise ModelUnavailable(
            f"The model server at {base_url} answered without the first token's top logprobs: the model must "
            "support logprobs (vLLM does; Ollama from 0.12; OpenAI's GPT-4o family does)."
        ) from None


def _short(value: Any) -> str:
    text = " ".join(str(value).split())
    return text if len(text) <= 200 else text[:199] + "…"
