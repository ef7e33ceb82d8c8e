"""Which images the open completeness checks hold, as the write room needs to know it: an adjudicator may confirm
a positive the looks agree on only there (annotator.completeness.checks says why)."""

from collections.abc import Iterable

from annotator.models import CheckImage, CompletenessCheck, LabelValue

# The final labels of a check's sampled image that an adjudicator confirms: unsure too, so doubt never helps a claim.
CHECKED = (LabelValue.RELEVANT, LabelValue.UNSURE)


def sampled_images(query_id: int, image_ids: Iterable[int] | None = None) -> set[int]:
    """The images of `query_id` (among `image_ids`) in the sample of an open completeness check: the query's own
    (with second looks) or the benchmark's."""
    pairs = CheckImage.objects.filter(
        query_id=query_id,
        completeness_check__status=CompletenessCheck.Status.CHECKING,
        completeness_check__second_judgments=True,
    )
    if image_ids is not None:
        pairs = pairs.filter(image_id__in=list(image_ids))
    return set(pairs.values_list("image_id", flat=True))


def decided_check_sampling(query_id: int, image_id: int) -> CompletenessCheck | None:
    """The latest decided completeness check whose sample held `image_id` of `query_id`, if any: where a positive the
    looks agreed on waited for confirmation and another write decided the check first, this says why no decision
    is wanted now."""
    pairs = CheckImage.objects.filter(query_id=query_id, image_id=image_id).exclude(
        completeness_check__status=CompletenessCheck.Status.CHECKING
    )
    pair = pairs.select_related("completeness_check").order_by("-completeness_check__created_at").first()
    return pair.completeness_check if pair is not None else None
