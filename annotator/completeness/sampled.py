"""What the open completeness checks ask of a query's annotators, the query's own and the benchmark's: the images
still wanting a look (the labeling page's "completeness check" ranking and the API's candidates, strategy=check).
Each check is decided by the write that settles its last pair (annotator.completeness.checks.decide_if_complete)."""

from annotator.completeness import checks
from annotator.completeness.sample_progress import progress_of
from annotator.labels.sealed import Writer
from annotator.models import Judgment, Query


def candidates(query: Query, viewer: Writer, k: int) -> list[int]:
    """The images of `query`'s open check, then of the open benchmark check, that still want a look and that
    `viewer` has not judged, in the samples' random order. Whether an image wants a look depends on how many
    judged it, never on what they said, so the order tells a blind judge nothing of the others' votes."""
    order: list[int] = []
    wanting: set[int] = set()
    for check in (checks.open_check(query), checks.open_check()):
        if check is None:
            continue
        now = progress_of(check, query)
        order += [image_id for image_id in now.order if image_id not in wanting]
        wanting |= set(now.second) | set(now.unjudged)
    mine = Judgment.objects.filter(query=query, image_id__in=list(wanting))
    mine = mine.filter(annotator=viewer) if viewer is not None else mine.filter(annotator__isnull=True)
    judged = set(mine.values_list("image_id", flat=True))
    return [image_id for image_id in order if image_id in wanting and image_id not in judged][:k]


def any_open(query: Query) -> bool:
    """Whether a check asks anything of `query`'s annotators (its own, or the benchmark's with pairs of it)."""
    pooled = checks.open_check()
    return checks.open_check(query) is not None or (pooled is not None and pooled.images.filter(query=query).exists())
