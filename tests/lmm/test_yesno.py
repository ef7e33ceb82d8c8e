"""INQUIRE's rule for turning a first token's probabilities into P(yes) (its lmm_utils.py)."""

import math

import pytest

from lmm import prompts, yesno


def test_score_is_p_yes_over_p_yes_plus_p_no():
    answer = yesno.from_top_logprobs([("Yes", math.log(0.65)), ("No", math.log(0.3)), ("Maybe", math.log(0.05))])
    assert answer.score == pytest.approx(0.65 / 0.95) and not answer.doubtful


def test_missing_yes_is_zero_missing_no_is_one_and_a_weak_pair_is_doubtful():
    assert yesno.from_top_logprobs([("No", -0.01), ("no", -5)]).score == 0.0
    assert yesno.from_top_logprobs([("Yes", -0.01), ("yes", -5)]).score == 1.0
    weak = yesno.from_top_logprobs([("The", math.log(0.7)), ("Yes", math.log(0.1)), ("No", math.log(0.1))])
    assert weak.score == pytest.approx(0.5) and weak.doubtful


def test_variants_are_summed_only_when_asked():
    top = [("Yes", math.log(0.4)), (" yes", math.log(0.2)), ("No", math.log(0.2))]
    assert yesno.from_top_logprobs(top).score == pytest.approx(0.4 / 0.6)  # INQUIRE's exact match
    summed = yesno.from_top_logprobs(top, yes=yesno.YES_VARIANTS, no=yesno.NO_VARIANTS)
    assert summed.score == pytest.approx(0.6 / 0.8)


def test_inquires_prompts():
    assert prompts.render(prompts.CHAT, "a {braced} bird") == (
        'Does this picture show exactly "a {braced} bird"?\n'
        'Answer the question with either "Yes" or "No" and nothing else.'
    )
    assert prompts.render(prompts.PALIGEMMA, "x") == "Q: Does this picture show x? Respond with yes or no.\nA:"
    with pytest.raises(ValueError, match="must contain"):
        prompts.render("Is it a bird?", "x")
