"""The API's labels, queries and judgments as JSON, and the schema's words for them."""

from typing import Any

from drf_spectacular.extensions import OpenApiSerializerFieldExtension
from rest_framework import serializers

from annotator.labels.changes import (
    MAX_LABELS_PER_API_BATCH,
    ImageIdField,
    LabelChangeSerializer,
    LabelValueField,
)
from annotator.labels.visibility import SEALED
from annotator.models import UNDECIDED, Decision, Label, LabelValue, Query
from catalog.models import Image
from common.api_params import StrictPrimaryKeyRelatedField


class QuerySerializer(serializers.ModelSerializer):
    query_id = serializers.IntegerField(source="id", read_only=True)

    class Meta:
        model = Query
        fields = [
            "query_id",
            "text",
            "supercategory",
            "category",
            "iconic_group",
            "split",
            "status",
            "fully_labeled",
            "notes",
        ]


FINAL_VALUES = [*LabelValue.choices, (UNDECIDED, "undecided")]
FINAL_LABEL_VALUES = [value for value, _ in FINAL_VALUES]  # the answer's enum (FinalValueFieldSchema)


class FinalValueField(LabelValueField):
    """A label value as sent (LabelValue), and as answered: a final label may also be undecided (split votes),
    which the schema lists and a request may not send."""

    def __init__(self, **kwargs: Any) -> None:
        serializers.ChoiceField.__init__(self, choices=FINAL_VALUES, **kwargs)


class LabelSerializer(serializers.ModelSerializer):
    id = serializers.IntegerField(read_only=True, allow_null=True, help_text="null where the image is sealed to you")
    annotator: "serializers.SlugRelatedField[Any]" = serializers.SlugRelatedField(
        slug_field="username",
        read_only=True,
        allow_null=True,
        help_text="who the final label rests on: null where several agree, or for an import",
    )
    query = StrictPrimaryKeyRelatedField(queryset=Query.objects.all())
    image = StrictPrimaryKeyRelatedField(queryset=Image.objects.all())
    value = FinalValueField()
    decided_by = serializers.ChoiceField(
        choices=[*Decision.values, SEALED],
        read_only=True,
        help_text="how the final label was reached; sealed: the image is in a blind overlap sample, sealed until an "
        "adjudicator decides it or staff open the sample, and value is your own judgment",
    )

    class Meta:
        model = Label
        fields = ["id", "query", "image", "value", "decided_by", "annotator", "created_at", "updated_at"]
        read_only_fields = ["id", "decided_by", "annotator", "created_at", "updated_at"]
        # (query, image) may be posted again to change a label: the view turns
        # that into an update instead of a uniqueness error.
        validators: list[Any] = []


class LabelValueSerializer(serializers.Serializer):
    value = LabelValueField()


class CandidateSerializer(serializers.Serializer):
    image_id = serializers.IntegerField()
    score = serializers.FloatField(allow_null=True)
    rank = serializers.IntegerField(help_text="1 for the best candidate")
    source = serializers.CharField(  # type: ignore[assignment]  # a field named as the API answers (Field.source)
        help_text='which ranking proposed it: "learned", or "text" for the text order\'s share of a learning '
        "ranking's batch; empty for the text ranking itself"
    )
    near_duplicates = serializers.ListField(
        child=serializers.IntegerField(),
        help_text="images near-identical to this one that wait behind it (labeled with it on the labeling page)",
    )


class CandidatesSerializer(serializers.Serializer):
    strategy = serializers.CharField()
    results = CandidateSerializer(many=True)


class LabelBatchSerializer(serializers.Serializer):
    """The API's batch body as the schema documents it; annotator.labels.changes.read_changes reads it (the page's
    saves go through the same reader, so both refuse a bad item in the same words)."""

    # A ListField, not many=True: its bounds reach the schema (minItems, maxItems), as read_changes holds them.
    labels = serializers.ListField(child=LabelChangeSerializer(), min_length=1, max_length=MAX_LABELS_PER_API_BATCH)


class LabelBatchResultSerializer(serializers.Serializer):
    written = serializers.IntegerField(help_text="how many labels changed (a label set to its own value is not)")
    labels = serializers.IntegerField(help_text="how many labels were sent")


class AdjudicationSerializer(serializers.Serializer):
    """An adjudicator's decision on one image of a query: its final label."""

    image = ImageIdField()
    value = LabelValueField()


class JudgmentOfSerializer(serializers.Serializer):
    annotator = serializers.CharField()
    value = serializers.CharField()


class DisagreementSerializer(serializers.Serializer):
    image = serializers.IntegerField()
    judgments = JudgmentOfSerializer(many=True)
    final = serializers.CharField(help_text="the final label: undecided until an adjudicator decides a tie")
    decided_by = serializers.CharField()
    blind_votes = JudgmentOfSerializer(
        many=True, required=False, help_text="revised only: each judge's blind vote, the one agreement counts"
    )
    reason = serializers.ChoiceField(
        choices=["disagreement", "confirm", "revised"],
        help_text="disagreement: the judgments differ; confirm: a positive a completeness claim counts only once an "
        "adjudicator confirms it (a check's sampled image its looks agree on, or a single-judgment positive of a "
        "frozen frame); revised: a judge changed their blind vote on a sealed image, so their agreement may not be "
        "their own",
    )


class DisagreementsSerializer(serializers.Serializer):
    results = DisagreementSerializer(many=True)


class MapPointSerializer(serializers.Serializer):
    image_id = serializers.IntegerField()
    x = serializers.FloatField()
    y = serializers.FloatField()
    label = serializers.ChoiceField(  # type: ignore[assignment]  # the point's label, not the field's label text
        choices=["relevant", "not_relevant", "unsure", "undecided"], allow_null=True, help_text="null: unlabeled"
    )


class MapPageSerializer(serializers.Serializer):
    points = MapPointSerializer(many=True)
    next = serializers.URLField(allow_null=True, help_text="the next page's URL; null at the end")


class FinalValueFieldSchema(OpenApiSerializerFieldExtension):  # type: ignore[no-untyped-call]  # its registry hook
    """FinalValueField in the schema by direction: a request sends a label value (LabelValue), an answer may also
    say undecided. (COMPONENT_SPLIT_REQUEST gives requests their own components, so the two enums do not meet.)"""

    target_class = FinalValueField

    def map_serializer_field(self, auto_schema: Any, direction: str) -> dict[str, Any]:
        values = LabelValue.values if direction == "request" else FINAL_LABEL_VALUES
        return {"type": "string", "enum": values}
