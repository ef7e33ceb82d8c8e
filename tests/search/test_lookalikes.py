"""When two images are look-alikes, read from the collection (search/lookalikes.py): the demo's random model used
to stack 201 images of six species behind one tile, since the fixed cosine 0.95 groups everything for a model
whose images all look alike; a world shaped like CLIP's must still stack its real near-duplicates."""

import numpy as np
import pytest

from annotator.labeling.grid import stacks_off
from annotator.models import Query
from evaluation import worlds
from search import batches, lookalikes
from search.facade import lookalike_rule, next_batch, search
from tests.search.test_batches import Exact

SAMPLE_SEED = 0


def sample_of(vectors: np.ndarray, n: int = lookalikes.SAMPLE) -> np.ndarray:
    rows = np.random.default_rng(SAMPLE_SEED).choice(len(vectors), size=min(n, len(vectors)), replace=False)
    return vectors[np.sort(rows)]


def test_a_world_shaped_like_clip_keeps_the_fixed_rule_and_its_near_duplicates_stack():
    world = worlds.team_world(images=20_000, seed=3)
    rule = lookalikes.calibrate(sample_of(world.vectors))
    assert rule.stacks and rule.threshold == lookalikes.NEAR_DUPLICATE
    assert 0.5 < rule.typical < lookalikes.NEAR_DUPLICATE  # distinct photos' neighbours, below near-duplicates
    # The "tiny" query hides 5 positives behind a crowd of 300 near-duplicates of one photo: once the annotator
    # called a few of the crowd not relevant, the crowd stacks behind one tile (most of it: STACK_LIMIT caps it).
    collection = Exact(world.vectors)
    query = next(q for q, kind in world.kinds.items() if kind == "tiny")
    text = world.texts[query]
    top = collection.top(text, 20, set())
    crowd = [i for i in top if i not in world.positives[query]][:5]
    picks = batches.stacked_picks(
        collection, text, 50, set(crowd), np.empty((0, world.vectors.shape[1])), collection.vectors(crowd),
        threshold=rule.threshold,
    )  # fmt: skip
    largest = max(len(pick.stack) for pick in picks)
    assert largest >= 100, "the near-duplicate crowd waits behind one image"


def test_a_model_that_cannot_tell_images_apart_forms_no_stack():
    """Every image within a hair of one direction (a random-weight model): the typical neighbour is as close as a
    near-duplicate, so stacks are off and a sentence says why."""
    rng = np.random.default_rng(1)
    centre = rng.normal(size=32)
    vectors = worlds.unit(centre + 0.02 * rng.normal(size=(3000, 32))).astype(np.float32)
    rule = lookalikes.calibrate(sample_of(vectors))
    assert not rule.stacks and rule.typical > 0.99
    assert "cannot tell look-alikes from other images" in rule.reason
    collection = Exact(vectors)
    text = worlds.unit(centre).astype(np.float32)
    negatives = collection.top(text, 10, set())
    picks = batches.stacked_picks(
        collection, text, 50, set(negatives), np.empty((0, 32)), collection.vectors(negatives), threshold=rule.threshold
    )  # fmt: skip
    assert len(picks) == 50 and all(not pick.stack for pick in picks)
    # With the fixed rule the same key would have labeled the collection's top by the hundreds.
    fixed = batches.stacked_picks(
        collection, text, 50, set(negatives), np.empty((0, 32)), collection.vectors(negatives)
    )
    assert max(len(pick.stack) for pick in fixed) > 100


def test_a_model_between_the_two_raises_the_threshold_halfway_to_identity():
    rng = np.random.default_rng(2)
    centres = worlds.unit(rng.normal(size=(40, 16)))
    vectors = worlds.unit(np.repeat(centres, 50, axis=0) + 0.09 * rng.normal(size=(2000, 16))).astype(np.float32)
    rule = lookalikes.calibrate(sample_of(vectors))
    assert lookalikes.NEAR_DUPLICATE > rule.typical > 0.9
    assert rule.threshold == pytest.approx((1 + rule.typical) / 2)
    sample = sample_of(vectors).astype(np.float64)
    sims = sample @ sample.T
    np.fill_diagonal(sims, -np.inf)
    assert rule.typical == pytest.approx(float(np.median(sims.max(axis=1))), abs=1e-5)  # the median, exactly


def test_too_small_a_sample_keeps_the_fixed_rule():
    rule = lookalikes.calibrate(np.eye(2, dtype=np.float32))
    assert rule.threshold == lookalikes.NEAR_DUPLICATE and rule.sampled == 2


@pytest.mark.django_db
def test_the_random_weight_demo_model_forms_no_stack(labeling):
    """The tests' tiny CLIP has random weights, loaded through the real path, as the demo's: its collection reads as
    one blur, so the engine forms no stack however many negatives are labeled, and the page says why."""
    rule = lookalike_rule()
    assert not rule.stacks, rule
    query: Query = labeling["query"]
    top = [hit.image_id for hit in search(text=query.text, k=40)]
    hits = next_batch(strategy="feedback", text=query.text, not_relevant_ids=top, k=50, exclude_image_ids=top)
    assert len(hits) == 50 and max(len(hit.stack) for hit in hits) == 0
    assert stacks_off() == rule.reason
