"""A panel of judges (the RMIR paper's 5-judge panels; see ../shared/docs/ANCHORS.md).

N vision-language judges (models, or one model with different prompts; 5 in the paper) each vote accept,
reject or abstain on a candidate; the panel's pre-label is the majority vote and its confidence the majority's
share of the panel. Pre-labels only propose: an annotator confirms each with one key, and only confirmed
labels count as ground truth."""

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from . import prompts
from .chat import ImageInput, Progress, Scorer
from .scoring import score_images

ACCEPT, REJECT, ABSTAIN = "accept", "reject", "abstain"
# A judge is sure enough to vote when its P(yes) is this far from 1/2; otherwise it abstains.
MARGIN = 0.1

# The five phrasings the panel asks (lmm/prompts.py).
PROMPTS = prompts.PANEL


def vote(p_yes: float) -> str:
    if p_yes >= 0.5 + MARGIN:
        return ACCEPT
    if p_yes <= 0.5 - MARGIN:
        return REJECT
    return ABSTAIN


@dataclass(frozen=True)
class Verdict:
    value: str  # accept, reject, or abstain (no majority for either)
    confidence: float  # the majority's share of the panel
    votes: list[Any]  # [(judge, P(yes), vote)]


def verdict(votes: list[tuple[str, float]]) -> Verdict:
    """The panel's pre-label from (judge, P(yes)) pairs: the most common vote (accept or reject beat
    abstain only by count; a tie between accept and reject is no verdict)."""
    cast = [(judge, p, vote(p)) for judge, p in votes]
    counts = Counter(v for _, _, v in cast)
    top = counts.most_common()
    value, count = top[0]
    if len(top) > 1 and top[1][1] == count:
        value = ABSTAIN
    return Verdict(value, count / len(cast), cast)


def judge(
    panel: Sequence[Scorer], query: str, images: Mapping[Any, ImageInput], progress: Progress | None = None
) -> tuple[dict[Any, Verdict], int]:
    """{key: Verdict} for `images` ({key: ImageInput}) from every judge of `panel`, through the answer
    cache; and the requests sent. Raises ModelUnavailable."""
    per_judge, asked = [], 0
    per_round, judges = len(images), len(panel)
    for number, scorer in enumerate(panel):

        def step(done: int, _total: int, offset: int = number * per_round) -> None:
            if progress:
                progress(offset + done, per_round * judges)

        scored = score_images(scorer, query, images, progress=step)
        asked += scored.asked
        per_judge.append((f"{scorer.name} #{number + 1}", scored.answers))
    verdicts = {key: verdict([(name, answers[key].score) for name, answers in per_judge]) for key in images}
    return verdicts, asked
