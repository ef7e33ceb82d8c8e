"""Each ranking strategy against a brute-force numpy computation of its formula."""

import numpy as np
import pytest
from scipy.optimize import approx_fprime

from search import strategies


def unit(rows):
    rows = np.asarray(rows, dtype=np.float64)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


@pytest.fixture
def world():
    rng = np.random.default_rng(3)
    q = unit(rng.normal(size=32))
    target = unit(q + 1.5 * unit(rng.normal(size=32)))  # what the annotator means: partly off the text
    positives = unit(target + 0.3 * rng.normal(size=(6, 32)))
    negatives = unit(q + 0.3 * rng.normal(size=(20, 32)))  # right words, wrong picture: near the text
    return q, target, positives, negatives


def seesaw_loss(w, q, positives, negatives, reg_lambda):
    """SeeSaw's objective written out term by term, the slow way."""
    x = np.vstack([positives, negatives])
    x = x - x.mean(axis=0)
    y = [1.0] * len(positives) + [0.0] * len(negatives)
    weight = len(negatives) / (len(positives) + strategies.PRIOR_POSITIVES)  # SeeSaw's balance, shrunk
    total = 0.0
    for xi, yi in zip(x, y, strict=True):
        p = 1 / (1 + np.exp(-(xi @ w)))
        total += (weight if yi else 1.0) * -(yi * np.log(p) + (1 - yi) * np.log(1 - p))
    norm = np.linalg.norm(w)
    return total / len(y) + reg_lambda / len(y) * ((norm - 1) ** 2 + np.sum((w / norm - q) ** 2))


@pytest.mark.parametrize("reg_lambda", [0.1, 1.0, 10.0])
def test_feedback_minimises_seesaws_objective(world, reg_lambda):
    q, _, positives, negatives = world
    objective = strategies.seesaw_objective(q, positives, negatives, reg_lambda)
    rng = np.random.default_rng(0)
    for w in [q, *rng.normal(size=(5, 32))]:  # the fast loss and gradient are the slow formula's (to float32)
        loss, gradient = objective(w)
        assert loss == pytest.approx(seesaw_loss(w, q, positives, negatives, reg_lambda), rel=1e-6)
        numeric = approx_fprime(w, lambda v: seesaw_loss(v, q, positives, negatives, reg_lambda), 1e-7)
        assert np.allclose(gradient, numeric, atol=1e-5)
    # What is fitted is the minimum of the slow formula: its gradient vanishes there; the ranking
    # vector is that minimum's direction.
    w = strategies.fit_seesaw(q, positives, negatives, reg_lambda)
    slow_gradient = approx_fprime(w, lambda v: seesaw_loss(v, q, positives, negatives, reg_lambda), 1e-7)
    assert np.linalg.norm(slow_gradient) < 1e-4
    direction = strategies.feedback_vector(q, positives, negatives, reg_lambda=reg_lambda)
    assert np.allclose(direction, w / np.linalg.norm(w))


def test_feedback_moves_toward_what_the_labels_mean(world):
    q, target, positives, negatives = world
    w = strategies.feedback_vector(q, positives, negatives)
    assert w @ target > q @ target  # closer to the meant direction than the text was
    assert np.isclose(np.linalg.norm(w), 1)
    assert np.allclose(strategies.feedback_vector(q, [], []), q)  # no labels: the text itself
    away = strategies.feedback_vector(q, [], negatives)  # no positive yet: pushed away from the negatives
    assert (negatives @ away).mean() < (negatives @ q).mean()


def test_rocchio_is_its_formula(world):
    q, _, positives, negatives = world
    expected = q + 0.75 * positives.mean(axis=0) - 0.15 * negatives.mean(axis=0)
    assert np.allclose(strategies.rocchio_vector(q, positives, negatives), expected / np.linalg.norm(expected))


def test_fusion_scores_are_the_mean_of_the_two_similarities(world):
    q, _, positives, negatives = world
    collection = np.vstack([positives, negatives])
    examples = positives[:2]
    fused = collection @ strategies.fusion_vector(q, examples)
    brute = [(x @ q + np.mean([x @ e for e in examples])) / 2 for x in collection]
    assert np.allclose(fused, brute)


def test_image_ranking_is_the_mean_example(world):
    _, _, positives, _ = world
    mean = positives[:3].mean(axis=0)
    assert np.allclose(strategies.image_vector(positives[:3]), mean / np.linalg.norm(mean))
    with pytest.raises(ValueError, match="at least one example image"):
        strategies.image_vector(np.empty((0, 32)))


def test_alpha_query_expansion_is_its_formula(world):
    q, _, positives, negatives = world
    top = np.vstack([positives[:1], negatives[:2]])
    expected = q + sum(max(q @ x, 0) ** 1.0 * x for x in top)
    assert np.allclose(strategies.alpha_qe_vector(q, top), expected / np.linalg.norm(expected))


def test_reciprocal_rank_fusion_is_its_formula():
    rankings = [[5, 3, 9], [3, 7], [9, 5, 3, 1]]
    brute = {}
    for ranking in rankings:
        for rank, item in enumerate(ranking, start=1):
            brute[item] = brute.get(item, 0) + 1 / (1 + rank)
    fused = strategies.reciprocal_rank_fusion(rankings)
    assert dict(fused) == pytest.approx(brute)
    assert [item for item, _ in fused] == sorted(brute, key=lambda item: (-brute[item], item))


def test_each_registered_strategy_ranks_by_its_own_function_and_says_what_it_lacks(world):
    q, _, positives, negatives = world
    inputs = strategies.RankingInputs(q, positives, negatives, positives[:2], best_match=lambda v: positives[:1])
    expected = {
        "text": q,
        "feedback": strategies.feedback_vector(q, positives, negatives),
        "rocchio": strategies.rocchio_vector(q, positives, negatives),
        "image": strategies.image_vector(positives[:2]),
        "fusion": strategies.fusion_vector(q, positives[:2]),
        "alpha_qe": strategies.alpha_qe_vector(q, positives[:1]),
    }
    assert set(strategies.REGISTRY) == set(expected) and tuple(strategies.REGISTRY) == strategies.STRATEGIES
    for name, vector in expected.items():
        assert np.allclose(strategies.strategy(name).vector_for(inputs), vector), name
    no_text = strategies.RankingInputs(None, positives, negatives, np.empty((0, 32)))
    for name, chosen in strategies.REGISTRY.items():
        if chosen.needs_text:
            with pytest.raises(ValueError, match=f"The {name} ranking starts from the query text"):
                chosen.vector_for(no_text)
        if chosen.needs_examples:
            with pytest.raises(ValueError, match=f"The {name} ranking needs example images"):
                chosen.vector_for(strategies.RankingInputs(q, positives, negatives, np.empty((0, 32))))
    assert strategies.LABEL_ONLY_STRATEGIES == ("text", "feedback", "rocchio", "alpha_qe")
    with pytest.raises(ValueError, match="one of text, feedback, rocchio, image, fusion, alpha_qe, not 'grep'"):
        strategies.strategy("grep")
