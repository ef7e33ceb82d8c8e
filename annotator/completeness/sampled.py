"""What the open completeness checks ask of a query's annotators, the query's own and the benchmark's: the images
still wanting a look (the labeling page's "completeness check" ranking and the API's candidates, strategy=check),
and the decision each check gets from the write that settles its last image."""

from typing import Any

from annotator.completeness import benchmark, checks
from annotator.labels.sealed import Writer
from annotator.models import CompletenessCheck, Judgment, Query


def candidates(query: Query, viewer: Writer, k: int) -> list[int]:
    """The images of `query`'s open check, then of the open benchmark check, that still want a look and that
    `viewer` has not judged, in the samples' random order. Whether an image wants a look depends on how many
    judged it, never on what they said, so the order tells a blind judge nothing of the others' votes."""
    order: list[int] = []
    wanting: set[int] = set()
    check = checks.open_check(query)
    if check is not None:
        now = checks.progress(check)
        order, wanting = list(now.order), set(now.second) | set(now.unjudged)
    pooled = benchmark.wanting(query)
    order += [image_id for image_id in pooled.order if image_id not in wanting]
    wanting |= pooled.wanting
    mine = Judgment.objects.filter(query=query, image_id__in=list(wanting))
    mine = mine.filter(annotator=viewer) if viewer is not None else mine.filter(annotator__isnull=True)
    judged = set(mine.values_list("image_id", flat=True))
    return [image_id for image_id in order if image_id in wanting and image_id not in judged][:k]


def any_open(query: Query) -> bool:
    """Whether a check asks anything of `query`'s annotators (its own, or the benchmark's with pairs of it)."""
    return checks.open_check(query) is not None or bool(benchmark.wanting(query).order)


def decide_if_complete(query_id: int, image_ids: Any = None, **_: Any) -> None:
    """Decide the open checks that the write which just settled `image_ids` of `query_id` completed: called in the
    write's transaction (annotator.labels' `judgments_settled` signal), never on a read."""
    benchmark.decide_if_complete(query_id, image_ids)
    check = CompletenessCheck.objects.filter(query_id=query_id, status=CompletenessCheck.Status.CHECKING).first()
    if check is None:
        return
    if image_ids is not None and not check.images.filter(image_id__in=list(image_ids)).exists():
        return
    now = checks.progress(check)
    if now.complete:
        checks.decide(check, now)
