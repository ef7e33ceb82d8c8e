"""The oracle annotator's replay, on rankings small enough to check by hand."""

import numpy as np
import pytest

from evaluation import simulation
from search import strategies
from search.facade import LABEL_ONLY_STRATEGIES, strategy_vector


def fixed(order):
    """A strategy that always proposes `order` (minus what is labeled), whatever the labels say."""

    def rank(strategy, relevant, not_relevant, exclude, k, recent=()):
        return [image for image in order if image not in set(exclude)][:k]

    return rank


def test_the_replay_counts_labels_to_each_share_of_the_positives():
    order = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]
    positives = {2, 5, 9, 10}
    result = simulation.replay(fixed(order), 7, "text", positives, batch=3, target=1.0)
    assert result.found == [0, 1, 1, 1, 2, 2, 2, 2, 3, 4]
    assert (result.labels_to(0.5), result.labels_to(0.75), result.labels_to(1.0)) == (5, 9, 10)
    assert result.recall_after(4) == 0.25 and result.recall_after(100) == 1.0
    summary = result.summary()
    assert summary["labels_to_50"] == 5 and summary["rule_stops_at"] is None


def test_inquires_rule_stops_after_100_not_relevant_in_a_row():
    order = list(range(1, 400))
    positives = {1, 50, 300}
    result = simulation.replay(fixed(order), 1, "text", positives, batch=50, max_labels=400)
    assert result.rule_stop() == (150, pytest.approx(2 / 3))  # 51..150 are 100 misses in a row


def test_the_replay_stops_at_the_target_or_the_budget():
    result = simulation.replay(fixed(list(range(100))), 1, "text", {0, 99}, batch=10, target=0.5)
    assert len(result.found) == 10  # the first batch found half: done
    result = simulation.replay(fixed(list(range(100))), 1, "text", {99}, batch=10, max_labels=25)
    assert len(result.found) == 25 and result.labels_to(0.95) is None


def test_the_synthetic_world_and_its_ranker():
    world = simulation.synthetic_world(images=6000, queries=4, species=30)
    assert set(world.hard.values()) == {True, False}
    for query_id, positives in world.positives.items():
        rank = simulation.world_ranker(world, query_id)
        first = rank("text", [], [], [], 50)
        assert len(first) == len(set(first)) == 50
        assert not set(rank("text", [], [], first, 50)) & set(first)
        assert simulation.replay(rank, query_id, "feedback", positives, max_labels=3000).labels_to(0.95)
    with pytest.raises(ValueError, match="ranks by text, feedback, rocchio, alpha_qe, not 'image'"):
        simulation.world_ranker(world, 1)("image", [], [], [], 5)


def test_the_world_replays_every_strategy_an_oracle_can_and_alpha_qe_expands_by_the_best_match():
    world = simulation.synthetic_world(images=3000, queries=2, species=20)
    rank = simulation.world_ranker(world, 1)
    for strategy in LABEL_ONLY_STRATEGIES:
        assert len(rank(strategy, [], [], [], 20)) == 20, strategy
    text = strategies.unit_vector(world.texts[1])
    best = int(np.argmax(world.vectors @ text.astype(np.float32)))
    expanded = strategy_vector("alpha_qe", world.texts[1], collection=world.vectors)
    # alpha QE moves the text toward its best match by their similarity (Radenovic et al.).
    similarity = max(float(world.vectors[best] @ text), 0.0)
    assert np.allclose(expanded, strategies.unit_vector(text + similarity * world.vectors[best]), atol=1e-5)
    with pytest.raises(ValueError, match="pass the collection's vectors"):
        strategy_vector("alpha_qe", world.texts[1])
