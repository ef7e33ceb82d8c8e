"""Structured reranking (Kumar, Vendrow and Beery, for INQUIRE; see ../shared/docs/ANCHORS.md).

A query is split into 2 or 3 visually verifiable yes/no sub-questions, written by a text model from the query
and a short context; every candidate image is asked each sub-question in turn with its own earlier answers
chained into the prompt, and its score is the mean of the P(yes) answers: S = (1/m) * sum over j of p_j.

The context and the questions are plain text staff can edit before a run (Query.context,
Query.subquestions); a run with them set asks the text model nothing.
"""

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from .chat import ImageInput, ModelUnavailable, Progress, Scorer
from .scoring import score_prompts
from .text import TextModel

MAX_QUESTIONS = 3

CONTEXT_PROMPT = (
    "You help experts search a collection of wildlife photos. In at most three sentences, give the visual "
    'facts an observer needs to judge whether a photo shows "{query}": what the subject looks like, and what '
    "the behaviour, posture or setting named looks like. No preamble."
)
QUESTIONS_PROMPT = (
    'A photo is relevant to the search "{query}".\nContext: {context}\n'
    "Write 2 or 3 yes/no questions, each checkable by looking at the photo alone, that together decide whether "
    "it is relevant. One question per line, each ending with a question mark, nothing else."
)
ASK_PROMPT = (
    'We are checking whether this picture shows "{query}".\nContext: {context}\n{earlier}'
    'Question: {question}\nAnswer the question with either "Yes" or "No" and nothing else.'
)


@dataclass(frozen=True)
class Plan:
    context: str
    questions: list[str]


@dataclass(frozen=True)
class Structured:
    score: float  # mean P(yes) over the questions
    answers: list[tuple[str, float]]  # (question, P(yes)) in order


def write_plan(text_model: TextModel, query: str, context: str = "") -> Plan:
    """The context (unless given) and the sub-questions from the text model. Raises ModelUnavailable."""
    context = context.strip() or text_model.complete(CONTEXT_PROMPT.replace("{query}", query))
    reply = text_model.complete(QUESTIONS_PROMPT.replace("{query}", query).replace("{context}", context))
    return Plan(context, parse_questions(reply))


def parse_questions(reply: str) -> list[str]:
    """Questions from a reply, one per line; list markers ("1.", "-", "*") removed. Raises ModelUnavailable
    when the reply holds none."""
    questions = []
    for line in reply.splitlines():
        line = re.sub(r"^\s*(?:[-*•]|\d+[.)])\s*", "", line).strip()
        if line.endswith("?") and len(line) > 3:
            questions.append(line)
    if not questions:
        raise ModelUnavailable(
            f"The text model wrote no yes/no question (one per line, ending with ?): {reply[:200]!r}"
        )
    return questions[:MAX_QUESTIONS]


def ask_prompt(query: str, context: str, question: str, earlier: list[tuple[str, float]]) -> str:
    """Sub-question `question`, with this image's earlier answers chained in (rounded to yes/no, with
    their probability, so that the prompt, and so the cache key, is stable)."""
    chained = "".join(f"Earlier: {q} {'Yes' if p >= 0.5 else 'No'} ({p:.2f})\n" for q, p in earlier)
    return (
        ASK_PROMPT.replace("{query}", query)
        .replace("{context}", context)
        .replace("{earlier}", chained)
        .replace("{question}", question)
    )


def score_structured(
    scorer: Scorer, query: str, plan: Plan, images: Mapping[Any, ImageInput], progress: Progress | None = None
) -> tuple[dict[Any, Structured], int, int]:
    """({key: Structured}, requests sent, answers from the cache) for `images` ({key: ImageInput}): one
    round per sub-question (all images in parallel within a round, each prompt holding that image's
    earlier answers), through the answer cache. Raises ModelUnavailable."""
    answers: dict[Any, list[tuple[str, float]]] = {key: [] for key in images}
    asked = cached = 0
    per_round = len(images)
    total = per_round * len(plan.questions)
    for round_number, question in enumerate(plan.questions):
        questions = {
            key: (ask_prompt(query, plan.context, question, answers[key]), image) for key, image in images.items()
        }

        def step(done: int, _total: int, offset: int = round_number * per_round) -> None:
            if progress:
                progress(offset + done, total)

        scored = score_prompts(scorer, questions, progress=step)
        asked += scored.asked
        cached += scored.cached
        for key, answer in scored.answers.items():
            answers[key].append((question, answer.score))
    results = {key: Structured(sum(p for _, p in pairs) / len(pairs), pairs) for key, pairs in answers.items()}
    return results, asked, cached


__all__ = ["ImageInput", "ModelUnavailable", "Plan", "Structured", "parse_questions", "score_structured", "write_plan"]
