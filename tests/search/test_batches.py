"""The batch rules of a ranking that learns (search/batches.py), on collections small enough to check by hand."""

import numpy as np
import pytest

from search import batches


def unit(rows):
    rows = np.asarray(rows, dtype=np.float32)
    return rows / np.linalg.norm(rows, axis=-1, keepdims=True)


class Exact:
    """A collection scored exactly: image id = row."""

    def __init__(self, vectors):
        self.all = unit(vectors)

    def top(self, vector, depth, exclude):
        scores = self.all @ np.asarray(vector, dtype=np.float32)
        order = [int(i) for i in np.lexsort((np.arange(len(scores)), -scores)) if int(i) not in exclude]
        return order[:depth]

    def vectors(self, image_ids):
        return self.all[list(image_ids)].reshape(-1, self.all.shape[1])


@pytest.fixture
def crowded():
    """Text along e0. A crowd of 30 near-identical images right on the text (ids 0-29), then 40 distinct
    images a little further (30-69), then the rest far away."""
    rng = np.random.default_rng(0)
    dim = 16
    text = unit(np.eye(dim)[0])
    crowd = unit(text + 0.003 * rng.normal(size=(30, dim)))
    others = unit(text + 0.6 * unit(rng.normal(size=(40, dim))))
    far = unit(rng.normal(size=(200, dim)) - 2 * text)
    return Exact(np.vstack([crowd, others, far])), text


def test_near_duplicates_stack_behind_their_best_look_alike(crowded):
    collection, text = crowded
    ranked = collection.top(text, 70, set())
    leader_of = batches.near_duplicate_stacks(collection.vectors(ranked), leaders_wanted=100)
    crowd_rows = [row for row, image_id in enumerate(ranked) if image_id < 30]
    assert {int(leader_of[row]) for row in crowd_rows} == {crowd_rows[0]}  # one stack, led by the best
    others = [row for row, image_id in enumerate(ranked) if image_id >= 30]
    assert [int(leader_of[row]) for row in others] == others  # distinct images lead their own
    # It stops once it has the leaders asked for: the rest is not examined.
    assert (batches.near_duplicate_stacks(collection.vectors(ranked), leaders_wanted=3) == -1).any()


def test_a_crowd_comes_whole_until_the_annotator_calls_it_not_relevant(crowded):
    collection, text = crowded
    picks = batches.stacked_picks(collection, text, 20, set(), np.empty((0, 16)), np.empty((0, 16)))
    assert [pick.image_id for pick in picks] == collection.top(text, 20, set())  # no evidence: the plain order
    # Five of the crowd labeled not relevant: the crowd now gives one image a batch, the others wait behind it.
    labeled = set(collection.top(text, 5, set()))
    negatives = collection.vectors(sorted(labeled))
    picks = batches.stacked_picks(collection, text, 20, labeled, np.empty((0, 16)), negatives)
    in_crowd = [pick for pick in picks if pick.image_id < 30]
    assert len(in_crowd) == 1 and len(in_crowd[0].stack) == 24
    order = collection.top(text, 100, labeled)
    assert [pick.image_id for pick in picks] == [order[0]] + [i for i in order if i >= 30][:19]
    # Called relevant more often than not (a wrong "not relevant" among them): the stack comes whole again.
    positives = collection.vectors(sorted(labeled)[:4])
    picks = batches.stacked_picks(collection, text, 20, labeled, positives, collection.vectors(sorted(labeled)[4:]))
    assert sum(pick.image_id < 30 for pick in picks) == 20


def test_past_the_deepest_look_waiting_images_fill_the_batch(crowded, monkeypatch):
    collection, text = crowded
    monkeypatch.setattr(batches, "MAX_DEPTH", 25)
    labeled = set(collection.top(text, 5, set()))
    picks = batches.stacked_picks(collection, text, 10, labeled, np.empty((0, 16)), collection.vectors(sorted(labeled)))
    assert len(picks) == 10 and len({pick.image_id for pick in picks}) == 10


def test_the_learned_ranking_leads_only_while_it_yields_more_than_the_text_order():
    assert batches.learned_share([], []) == 1 - batches.PROBE_SHARE  # the annotator's choice, at the start
    assert batches.learned_share([True, False, True], [False] * 10) == 1 - batches.PROBE_SHARE
    assert batches.learned_share([False] * 30, [True, False, False]) == batches.PROBE_SHARE
    assert batches.learned_share([False] * 100, [False] * 100) == batches.PROBE_SHARE  # a tie: the text order
    assert batches.yield_of([]) == 0.5 and batches.yield_of([True, True]) == 0.75


def test_interleave_spreads_the_smaller_share_through_the_batch():
    first = [batches.Pick(i, batches.LEARNED) for i in range(9)]
    second = [batches.Pick(100 + i, batches.TEXT) for i in range(3)]
    merged = [pick.image_id for pick in batches.interleave(first, second)]
    assert sorted(merged) == sorted([*range(9), 100, 101, 102])
    # The longer share opens, the shorter one's best follows, the rest evenly after: one who stops part-way
    # through the batch has seen the best of both.
    assert [merged.index(i) for i in (100, 101, 102)] == [1, 5, 9]
    assert [i for i in merged if i < 100] == list(range(9))  # each list keeps its order
    assert batches.interleave(first, []) == first
    assert [pick.image_id for pick in batches.interleave(second, first)] == merged  # whichever is shorter


def test_compose_turns_to_the_text_order_when_the_learned_ranking_finds_nothing(crowded):
    collection, text = crowded
    wrong = unit(-np.eye(16)[0] + 0.1)  # a learned vector pointing away from everything relevant
    labeled_text = collection.top(text, 10, set())  # the text order's first ten: two relevant
    far = collection.top(wrong, 60, set(labeled_text))  # the learned ranking's own sixty: none relevant
    relevant, not_relevant = labeled_text[:2], labeled_text[2:] + far
    recent = [(i, i in relevant) for i in labeled_text + far]
    picks = batches.compose(
        collection, learned=wrong, text=text, k=20, exclude=set(labeled_text + far),
        relevant=collection.vectors(relevant), not_relevant=collection.vectors(not_relevant), recent=recent,
    )  # fmt: skip
    sources = [pick.source for pick in picks]
    assert sources.count(batches.TEXT) == 18 and sources.count(batches.LEARNED) == 2
    # The learned ranking's own finds relevant instead: it leads.
    recent = [(i, i in far[:30]) for i in labeled_text[2:] + far]
    picks = batches.compose(
        collection, learned=wrong, text=text, k=20, exclude=set(labeled_text + far),
        relevant=collection.vectors(far[:30]), not_relevant=collection.vectors(labeled_text[2:] + far[30:]),
        recent=recent,
    )  # fmt: skip
    assert [pick.source for pick in picks].count(batches.LEARNED) == 18
    assert len({pick.image_id for pick in picks}) == 20 and not {pick.image_id for pick in picks} & set(
        labeled_text + far
    )


def test_without_a_text_the_batch_is_the_ranking_alone(crowded):
    collection, text = crowded
    picks = batches.compose(
        collection,
        learned=text,
        text=None,
        k=5,
        exclude=set(),
        relevant=np.empty((0, 16)),
        not_relevant=np.empty((0, 16)),
        recent=[],
    )
    assert [pick.image_id for pick in picks] == collection.top(text, 5, set())


def _compose(collection, learned, text, k, labeled_relevant, labeled_not_relevant, recent):
    return batches.compose(
        collection, learned=learned, text=text, k=k, exclude=set(labeled_relevant + labeled_not_relevant),
        relevant=collection.vectors(labeled_relevant), not_relevant=collection.vectors(labeled_not_relevant),
        recent=recent,
    )  # fmt: skip


def test_before_any_label_the_batch_is_the_text_order(crowded):
    collection, text = crowded
    picks = _compose(collection, text, text, 20, [], [], [])
    assert [pick.image_id for pick in picks] == collection.top(text, 20, set())
    assert {pick.source for pick in picks} == {batches.TEXT}  # nothing learned yet: named for what it is


def test_the_leading_ranking_keeps_its_own_order_and_the_other_takes_what_is_left(crowded):
    """While the text order leads, a learned ranking that agrees with it on the next images must not take
    them for its small share (the text order's share then going deeper): the text order's share is its
    own next images, exactly, and the learned share comes from what is left."""
    collection, text = crowded
    labeled = collection.top(text, 10, set())
    # A learned ranking close to the text, led away a little: its best unlabeled images are the text's.
    learned = unit(text + 0.05 * np.eye(16)[1])
    # Six of the text order's first ten relevant, nothing yet from the learned ranking's own: the text leads.
    recent = [(i, n < 6) for n, i in enumerate(labeled)]
    picks = _compose(collection, learned, text, 20, labeled[:6], labeled[6:], recent)
    from_text = [pick.image_id for pick in picks if pick.source == batches.TEXT]
    assert len(from_text) == 18
    assert from_text == collection.top(text, 18, set(labeled))
    from_learned = [pick.image_id for pick in picks if pick.source == batches.LEARNED]
    assert from_learned == [i for i in collection.top(learned, 40, set(labeled)) if i not in from_text][:2]
    assert [pick.source for pick in picks[:2]] == [batches.TEXT, batches.LEARNED]  # each share's best at once
