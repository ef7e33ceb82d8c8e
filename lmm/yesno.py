"""A vision-language model's answer to "Does this picture show ...?" as a relevance score.

INQUIRE's rule (its src/lmm_utils.py, convert_gpt_response_to_preds and ModelWrapper.scores_to_pred):
from the first generated token's probabilities, score = p(Yes) / (p(Yes) + p(No)); 0 when no "Yes"
token is among the top alternatives, 1 when no "No" is; and a warning when p(Yes) + p(No) < 0.9 (the
model mostly wanted to say something else, so the score means little). For chat APIs INQUIRE matches
the tokens "Yes" and "No" exactly; for local models it reads the one token id of each model family's
answer word. Quire's transformers backend sums every casing and leading-space variant instead, so one
rule serves every family (YES_VARIANTS). Pure: no Django, no network.
"""

import math
from collections.abc import Sequence
from dataclasses import dataclass

WARN_BELOW = 0.9
YES_VARIANTS = ("Yes", "yes", "YES", " Yes", " yes", " YES")
NO_VARIANTS = ("No", "no", "NO", " No", " no", " NO")


@dataclass(frozen=True)
class YesNo:
    score: float  # P(yes) in [0, 1]
    p_yes: float
    p_no: float

    @property
    def doubtful(self) -> bool:
        """INQUIRE's warning: the answer's first token was mostly neither Yes nor No."""
        return self.p_yes + self.p_no < WARN_BELOW


def from_top_logprobs(
    top_logprobs: Sequence[tuple[str, float]], yes: Sequence[str] = ("Yes",), no: Sequence[str] = ("No",)
) -> YesNo:
    """Score from (token, logprob) pairs of the first token. `yes` and `no`: the tokens that count."""
    p_yes = sum(math.exp(logprob) for token, logprob in top_logprobs if token in yes)
    p_no = sum(math.exp(logprob) for token, logprob in top_logprobs if token in no)
    if not any(token in yes for token, _ in top_logprobs):
        return YesNo(0.0, p_yes, p_no)
    if not any(token in no for token, _ in top_logprobs):
        return YesNo(1.0, p_yes, p_no)
    return YesNo(p_yes / (p_yes + p_no), p_yes, p_no)
