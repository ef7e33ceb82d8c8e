"""Scoring images with a vision-language model through the answer cache: what commands and jobs call.

Answers are stored one by one as they arrive, so a run that fails or is killed half way keeps what it
was given, and the next run asks only for the rest.
"""

import hashlib
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction

from . import prompts
from .chat import ChatScorer, ImageInput, ModelUnavailable
from .models import Answer, prompt_key
from .yesno import YesNo

__all__ = ["ChatScorer", "ImageInput", "ModelUnavailable", "Scored", "configured_scorer", "score_images"]


def configured_scorer() -> ChatScorer:
    """The scorer the settings describe (QUIRE_LMM_*). Raises ModelUnavailable when none is configured."""
    return ChatScorer(
        base_url=settings.QUIRE_LMM_BASE_URL,
        model=settings.QUIRE_LMM_MODEL,
        api_key=settings.QUIRE_LMM_API_KEY,
        prompt=settings.QUIRE_LMM_PROMPT or prompts.CHAT,
        timeout=settings.QUIRE_LMM_TIMEOUT,
        max_retries=settings.QUIRE_LMM_MAX_RETRIES,
        concurrency=settings.QUIRE_LMM_CONCURRENCY,
    )


@dataclass
class Scored:
    answers: dict  # key -> YesNo
    asked: int  # requests sent
    cached: int  # answers taken from the cache


def score_images(scorer: ChatScorer, query: str, images: dict, progress=None) -> Scored:
    """P(yes) for each of `images` ({key: ImageInput}) for `query`: cached answers first, the rest asked.
    Raises ModelUnavailable (the answers given before the failure are kept)."""
    prompt = prompts.render(scorer.prompt, query)
    digest = {key: hashlib.sha256(image.data).hexdigest() for key, image in images.items()}
    known = {
        row.image_sha256: YesNo(row.score, row.p_yes, row.p_no)
        for row in Answer.objects.filter(
            model=scorer.name, prompt_sha256=prompt_key(prompt), image_sha256__in=set(digest.values())
        )
    }
    answers = {key: known[sha] for key, sha in digest.items() if sha in known}
    missing = [key for key in images if key not in answers]
    done = len(answers)
    if progress:
        progress(done, len(images))

    def keep(index, answer):
        nonlocal done
        key = missing[index]
        answers[key] = answer
        _store(scorer.name, prompt, digest[key], answer)
        done += 1
        if progress:
            progress(done, len(images))

    scorer.ask_many(query, [images[key] for key in missing], on_answer=keep)
    return Scored(answers, asked=len(missing), cached=len(images) - len(missing))


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
