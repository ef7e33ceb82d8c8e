"""When two images are look-alikes (near-duplicates), for the model that embedded this collection.

search/batches.py stacks a candidate behind a better one it is near-identical to, and one key on the labeling
page labels the whole stack. A fixed cosine (NEAR_DUPLICATE, 0.95) is right for CLIP ViT-H, where photos of one
species sit at about 0.6 to 0.9 and bursts, crops and re-uploads of one photo above 0.95. It is wrong for a model
whose images all look alike (the demo's random weights put nearly every pair above 0.98): there, one key labeled
201 images of six species. So the threshold comes from the collection's own statistics: each sampled image's
nearest other image in the sample says how close *typical* neighbours are. Near-duplicates are the exception, so
the median of those nearest-neighbour cosines is a typical, distinct neighbour; a look-alike must sit at least
halfway from there to identity (and never below NEAR_DUPLICATE). Where the typical neighbour is already as close
as a near-duplicate, the model cannot tell images apart: stacks are off, and `reason` says why.
"""

from dataclasses import dataclass

import numpy as np

NEAR_DUPLICATE = 0.95  # the floor: CLIP ViT-H's near-duplicates (see the module's docstring)
SAMPLE = 1000  # images sampled to read the collection's neighbours (a 1,000 x 1,000 product: milliseconds)
OFF = float("inf")  # no cosine reaches it: nothing stacks


@dataclass(frozen=True)
class LookAlikeRule:
    """The cosine at or above which two images are look-alikes (OFF: never), what it was read from, and why."""

    threshold: float
    typical: float  # the median nearest-neighbour cosine in the sample (nan when the sample is too small)
    sampled: int
    reason: str

    @property
    def stacks(self) -> bool:
        return self.threshold != OFF


def calibrate(vectors: np.ndarray) -> LookAlikeRule:
    """The rule for a collection, from a sample of its unit vectors (rows; up to SAMPLE of them is plenty)."""
    sample = np.asarray(vectors, dtype=np.float32)
    if len(sample) < 3:
        return LookAlikeRule(NEAR_DUPLICATE, float("nan"), len(sample), "Too few images to read: the fixed rule.")
    sims = sample @ sample.T
    np.fill_diagonal(sims, -np.inf)
    typical = float(np.median(sims.max(axis=1)))
    if typical >= NEAR_DUPLICATE:
        return LookAlikeRule(
            OFF,
            typical,
            len(sample),
            f"Look-alike stacks are off: this model puts a typical image as close to its nearest neighbour "
            f"(cosine {typical:.3f}) as a near-duplicate, so it cannot tell look-alikes from other images.",
        )
    threshold = max(NEAR_DUPLICATE, (1 + typical) / 2)
    return LookAlikeRule(
        threshold,
        typical,
        len(sample),
        f"Images at cosine {threshold:.3f} or more are look-alikes (a typical nearest neighbour: {typical:.3f}).",
    )
