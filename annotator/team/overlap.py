"""Drawing a query's blind overlap sample: a share of the images labeled so far, every image down to a rank of
the text ranking, or both. What an annotator then sees of the sample is the write room's rule
(annotator.labels.sealed), until an adjudicator decides an image or staff open the sample (`open_sample`).
"""

import math
import random
from collections import Counter

from annotator.labels import sealed
from annotator.models import Judgment, OverlapImage, Query
from search.facade import search

MAX_JUDGMENTS_WANTED = 3


def draw_sample(query: Query, *, fraction: float | None = None, top: int | None = None, wanted: int = 2) -> int:
    """Grow `query`'s overlap sample to `fraction` of the images judged so far and to every image down to rank
    `top` of its text ranking, each to get `wanted` judgments; returns how many images it added. Images
    already in the sample stay (a judgment given blind stays blind). Drawing again after more labeling tops
    the share up. The draw is seeded by the query, so the same state gives the same sample.
    Raises ValueError for a share outside 0..1 or a count outside 2..3, and SearchUnavailable (search) for
    `top` when the collection cannot be searched."""
    if fraction is not None and not (math.isfinite(fraction) and 0 <= fraction <= 1):
        raise ValueError(f"The overlap share must be between 0 and 1 (0.1 is 10%), not {fraction}.")
    if not 2 <= wanted <= MAX_JUDGMENTS_WANTED:
        raise ValueError(f"Each image of the sample is judged by 2 or {MAX_JUDGMENTS_WANTED} annotators, not {wanted}.")
    if top is not None and top < 1:
        raise ValueError(f"The overlap rank must be 1 or more, not {top}.")
    chosen = set(OverlapImage.objects.filter(query=query).values_list("image_id", flat=True))
    before = len(chosen)
    if fraction:
        judged = sorted(set(Judgment.objects.filter(query=query).values_list("image_id", flat=True)))
        target = math.ceil(fraction * len(judged))
        have = len(chosen.intersection(judged))
        rest = [image_id for image_id in judged if image_id not in chosen]
        chosen.update(random.Random(query.pk).sample(rest, max(0, min(target - have, len(rest)))))
    if top:
        chosen.update(hit.image_id for hit in search(text=query.text, k=top))
    sealed.seal(query.pk, chosen)
    query.overlap_fraction, query.overlap_top, query.judgments_wanted = fraction, top, wanted
    query.save(update_fields=["overlap_fraction", "overlap_top", "judgments_wanted", "updated_at"])
    return len(chosen) - before


def open_sample(query: Query) -> tuple[int, int]:
    """Open `query`'s overlap sample where its images have their judgments (or an adjudicator's decision): their
    judges see the others' votes and the final labels from now on. Images still waiting for a judgment stay sealed,
    so that the judges yet to come judge blind. Returns (opened now, still sealed)."""
    wanted = max(2, query.judgments_wanted)
    closed = OverlapImage.objects.filter(query=query, opened_at__isnull=True)
    counts = Counter(
        Judgment.objects.filter(query=query, image_id__in=closed.values("image_id")).values_list("image_id", flat=True)
    )
    complete = [image_id for image_id, n in counts.items() if n >= wanted]
    opened = sealed.open_images(query.pk, complete)
    return opened, sealed.sealed_queries([query.pk]).get(query.pk, 0)  # an adjudicated image is sealed no more
