"""Label changes as clients send them: one reader for the labeling page's saves, the API's batches and Submit,
written with DRF's fields so that the API's schema documents exactly what is read. Check first, then write
(Zulip's `check_*` before `do_*`): `read_changes` and `read_image_ids` turn a body into LabelChanges or image
ids, or raise BadChanges with the one sentence every surface shows; only then does annotator.labels write.
The page answers the sentence as {"error": ...}, the API as {"detail": ...}.
"""

from collections.abc import Iterable
from typing import Any

from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from annotator.labels import LabelChange
from annotator.models import LabelValue
from catalog.models import Image
from common.api_params import echo, strict_id

# The labeling page's saves: a range selection or the undo of a Submit of 500 fits; more is a wrong client.
MAX_LABELS_PER_SAVE = 1000
# A script's batch through the API (POST /api/queries/{id}/labels/).
MAX_LABELS_PER_API_BATCH = 5000


class LabelValueField(serializers.ChoiceField):
    """A label value. A wrong one is quoted cut short in the error: DRF quotes it whole, megabytes included."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(choices=LabelValue.choices, **kwargs)

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, str) and (data in LabelValue.values or (data == "" and self.allow_blank)):
            return data
        self.fail("invalid_choice", input=echo(data))


@extend_schema_field({"type": "integer", "minimum": 0, "maximum": 2**63 - 1})  # strict_id's range
class ImageIdField(serializers.Field):
    """An image id, checked in one query for the whole batch (annotator.labels.changes), not one per label."""

    default_error_messages = {"invalid": "Must be an image id (a whole number), not {input}."}

    def to_internal_value(self, data: Any) -> Any:
        if (image_id := strict_id(data)) is None:
            self.fail("invalid", input=echo(data))
        return image_id

    def to_representation(self, value: Any) -> Any:
        return value


@extend_schema_field({"type": "integer", "minimum": 0, "maximum": 2**31 - 1})
class MillisecondsField(serializers.Field):
    """A JSON whole number of milliseconds, 0 to 2^31 - 1: not "2700", not 1.5, not true."""

    default_error_messages = {"invalid": "Must be a whole number of milliseconds, not {input}."}

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, bool) or not isinstance(data, int) or not 0 <= data < 2**31:
            self.fail("invalid", input=echo(data))
        return data

    def to_representation(self, value: Any) -> Any:
        return value


class LabelChangeSerializer(serializers.Serializer):
    """One label as the labeling page and the API both send it."""

    image = ImageIdField()
    value = LabelValueField(allow_blank=True, help_text='"" removes the label')
    lead_time_ms = MillisecondsField(required=False, allow_null=True, help_text="how long the image was looked at")

    def to_internal_value(self, data: Any) -> Any:
        item = super().to_internal_value(data)
        return LabelChange(item["image"], item["value"], item.get("lead_time_ms"))


NOT_A_LIST = "labels must be a non-empty list of {image, value} objects."


class BadChanges(ValueError):
    """A body of label changes the server will not write; the text says what to fix. `unknown` lists image ids
    that are not in the collection (the page answers those 404, the API 400, as each always has)."""

    def __init__(self, sentence: str, unknown: list[int] | None = None) -> None:
        super().__init__(sentence)
        self.unknown = unknown or []


def read_changes(
    items: object, *, limit: int, sources: Iterable[str] | None = None, source: str | None = None
) -> list[LabelChange]:
    """The LabelChanges of `items` (a list of {image, value, lead_time_ms[, source]}), every image in the
    collection. With `sources`, each item's own "source" (else `source`, the batch's) must be one of them
    (the page mixes clicks and keys); without, an item's source is the caller's. BadChanges names the first
    wrong item: "labels[3]: value: ...", or "the label: ..." for a batch of one."""
    if not isinstance(items, list) or not items:
        raise BadChanges(NOT_A_LIST)
    if len(items) > limit:
        raise BadChanges(f"at most {limit} labels per request, not {len(items)}; send the rest in another.")
    read = LabelChangeSerializer(data=items, many=True)
    if not read.is_valid():
        raise BadChanges(_first_error(read.errors, len(items)))
    changes: list[LabelChange] = list(read.validated_data)
    if sources is not None:
        allowed = tuple(sources)
        given = [item.get("source", source) for item in items]
        for position, given_by in enumerate(given):
            if given_by not in allowed:
                raise BadChanges(f"{_where(position, len(items))}: source must be {' or '.join(allowed)}.")
        changes = [
            LabelChange(change.image_id, change.value, change.lead_time_ms, given_by)
            for change, given_by in zip(changes, given, strict=True)
        ]
    _check_images({change.image_id for change in changes})
    return changes


def read_image_ids(raw: object, *, limit: int) -> list[int]:
    """The image ids of a Submit (a list of ids), every one in the collection; BadChanges otherwise."""
    if not isinstance(raw, list):
        raise BadChanges("images must be a list of image ids.")
    if len(raw) > limit:
        raise BadChanges(f"at most {limit} images per Submit, not {len(raw)}: submit the first ones, then the rest.")
    image_ids = []
    for value in raw:
        if (image_id := strict_id(value)) is None:
            raise BadChanges(f"image must be an image id (a whole number), not {echo(value)}.")
        image_ids.append(image_id)
    _check_images(set(image_ids))
    return image_ids


def _check_images(wanted: set[int]) -> None:
    """One query for the whole batch: BadChanges naming (five of) the ids not in the collection."""
    unknown = sorted(wanted - set(Image.objects.filter(pk__in=wanted).values_list("id", flat=True)))
    if unknown:
        raise BadChanges(f"No image {', '.join(map(str, unknown[:5]))} in the collection.", unknown)


def _where(position: int, count: int) -> str:
    return f"labels[{position}]" if count > 1 else "the label"


def _first_error(errors: object, count: int) -> str:
    """DRF's errors of a many=True serializer (a list with {} for the good items, or a dict by position) as the
    first wrong item's sentence."""
    listed = errors if isinstance(errors, list) else []
    found = sorted(errors.items()) if isinstance(errors, dict) else enumerate(listed)
    for position, item_errors in found:
        if isinstance(item_errors, dict) and item_errors:
            field, messages = next(iter(item_errors.items()))
            return f"{_where(position, count)}: {field}: {messages[0]}"
    return "each label must be an object with image and value."
