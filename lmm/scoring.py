"""Scoring images with a vision-language model through the answer cache: what commands and jobs call.

Answers are stored one by one as they arrive, so a run that fails or is killed half way keeps what it
was given, and the next run asks only for the rest.
"""

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import IntegrityError, transaction

from . import prompts
from .chat import ChatScorer, ImageInput, ModelUnavailable, Progress, Scorer
from .images import ImageGenerator
from .models import Answer, prompt_key
from .text import TextModel
from .yesno import YesNo

__all__ = [
    "ChatScorer",
    "ImageInput",
    "ModelUnavailable",
    "Scored",
    "configured_image_generator",
    "configured_panel",
    "configured_scorer",
    "configured_text_model",
    "score_images",
    "score_prompts",
]


def configured_scorer() -> Scorer:
    """The scorer the settings describe (QUIRE_LMM_*): a local transformers model when QUIRE_LMM_MODEL is
    "local:/path/to/folder", else the OpenAI-compatible server at QUIRE_LMM_BASE_URL. Raises
    ModelUnavailable when none is configured."""
    if settings.QUIRE_LMM_MODEL.startswith("local:"):
        from .local import LocalScorer  # transformers and torch: only for a local model

        return LocalScorer(
            settings.QUIRE_LMM_MODEL.removeprefix("local:"), prompt=settings.QUIRE_LMM_PROMPT or prompts.OPEN_MODEL
        )
    return _chat_scorer(settings.QUIRE_LMM_MODEL, settings.QUIRE_LMM_PROMPT or prompts.CHAT)


def _chat_scorer(model: str, prompt: str) -> ChatScorer:
    return ChatScorer(
        base_url=settings.QUIRE_LMM_BASE_URL,
        model=model,
        api_key=settings.QUIRE_LMM_API_KEY,
        prompt=prompt,
        timeout=settings.QUIRE_LMM_TIMEOUT,
        max_retries=settings.QUIRE_LMM_MAX_RETRIES,
        concurrency=settings.QUIRE_LMM_CONCURRENCY,
    )


def configured_text_model() -> TextModel:
    """The text model the settings describe (QUIRE_TEXT_MODEL*). Raises ModelUnavailable when none is."""
    return TextModel(
        base_url=settings.QUIRE_TEXT_MODEL_BASE_URL,
        model=settings.QUIRE_TEXT_MODEL,
        api_key=settings.QUIRE_TEXT_MODEL_API_KEY,
        timeout=settings.QUIRE_LMM_TIMEOUT,
        max_retries=settings.QUIRE_LMM_MAX_RETRIES,
    )


def configured_image_generator() -> ImageGenerator:
    """The image generator the settings describe (QUIRE_IMAGE_MODEL*). Raises ModelUnavailable."""
    return ImageGenerator(
        base_url=settings.QUIRE_IMAGE_MODEL_BASE_URL,
        model=settings.QUIRE_IMAGE_MODEL,
        api_key=settings.QUIRE_IMAGE_MODEL_API_KEY,
        size=settings.QUIRE_IMAGE_SIZE,
    )


def configured_panel() -> list[ChatScorer]:
    """The judge panel: QUIRE_JUDGES (a JSON list of {"model", "prompt"}, either optional), else the
    configured model asked the five phrasings of prompts.PANEL. Raises ModelUnavailable."""
    judges = settings.QUIRE_JUDGES or [{"prompt": prompt} for prompt in prompts.PANEL]
    return [
        _chat_scorer(
            judge.get("model") or settings.QUIRE_LMM_MODEL,
            judge.get("prompt") or settings.QUIRE_LMM_PROMPT or prompts.CHAT,
        )
        for judge in judges
    ]


@dataclass
class Scored:
    answers: dict[Any, YesNo]  # the caller's key (Quire: an image id) -> its answer
    asked: int  # requests sent
    cached: int  # answers taken from the cache


def score_images(
    scorer: Scorer, query: str, images: Mapping[Any, ImageInput], progress: Progress | None = None
) -> Scored:
    """P(yes) for each of `images` ({key: ImageInput}) for `query`'s yes/no question: cached answers
    first, the rest asked. Raises ModelUnavailable (the answers given before the failure are kept)."""
    prompt = prompts.render(scorer.prompt, query)
    return score_prompts(scorer, {key: (prompt, image) for key, image in images.items()}, progress)


def score_prompts(
    scorer: Scorer, questions: Mapping[Any, tuple[str, ImageInput]], progress: Progress | None = None
) -> Scored:
    """P(yes) for each of `questions` ({key: (prompt, ImageInput)}), through the cache."""
    digest = {key: hashlib.sha256(image.data).hexdigest() for key, (_, image) in questions.items()}
    prompt_of = {key: prompt for key, (prompt, _) in questions.items()}
    known = {}
    for prompt in set(prompt_of.values()):
        for row in Answer.objects.filter(
            model=scorer.name, prompt_sha256=prompt_key(prompt), image_sha256__in=set(digest.values())
        ):
            known[(prompt, row.image_sha256)] = YesNo(row.score, row.p_yes, row.p_no)
    answers = {key: known[(prompt_of[key], digest[key])] for key in questions if (prompt_of[key], digest[key]) in known}
    missing = [key for key in questions if key not in answers]
    done = len(answers)
    if progress:
        progress(done, len(questions))

    def keep(index: int, answer: YesNo) -> None:
        nonlocal done
        key = missing[index]
        answers[key] = answer
        _store(scorer.name, prompt_of[key], digest[key], answer)
        done += 1
        if progress:
            progress(done, len(questions))

    scorer.ask_many([questions[key] for key in missing], on_answer=keep)
    return Scored(answers, asked=len(missing), cached=len(questions) - len(missing))


def _store(model: str, prompt: str, image_sha256: str, answer: YesNo) -> None:
    try:
        with transaction.atomic():
            Answer.objects.create(
                model=model,
                prompt_sha256=prompt_key(prompt),
                image_sha256=image_sha256,
                prompt=prompt,
                score=answer.score,
                p_yes=answer.p_yes,
                p_no=answer.p_no,
            )
    except IntegrityError:
        pass  # the same image's answer stored meanwhile (two copies of one file, or two runs at once)
