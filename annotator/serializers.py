from rest_framework import serializers

from catalog.api_params import StrictPrimaryKeyRelatedField, echo
from catalog.models import Image

from .models import Label, LabelValue, Query


class LabelValueField(serializers.ChoiceField):
    """A label value. A wrong one is quoted cut short in the error: DRF quotes it whole, megabytes included."""

    def __init__(self, **kwargs):
        super().__init__(choices=LabelValue.choices, **kwargs)

    def to_internal_value(self, data):
        if isinstance(data, str) and data in LabelValue.values:
            return data
        self.fail("invalid_choice", input=echo(data))


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


class LabelSerializer(serializers.ModelSerializer):
    annotator = serializers.SlugRelatedField(slug_field="username", read_only=True)
    query = StrictPrimaryKeyRelatedField(queryset=Query.objects.all())
    image = StrictPrimaryKeyRelatedField(queryset=Image.objects.all())
    value = LabelValueField()

    class Meta:
        model = Label
        fields = ["id", "query", "image", "value", "annotator", "created_at", "updated_at"]
        read_only_fields = ["id", "annotator", "created_at", "updated_at"]
        # (query, image) may be posted again to change a label: the view turns
        # that into an update instead of a uniqueness error.
        validators = []


class LabelValueSerializer(serializers.Serializer):
    value = LabelValueField()


class CandidateSerializer(serializers.Serializer):
    image_id = serializers.IntegerField()
    score = serializers.FloatField()
    rank = serializers.IntegerField(help_text="1 for the best candidate")


class CandidatesSerializer(serializers.Serializer):
    strategy = serializers.CharField()
    results = CandidateSerializer(many=True)


class LabelChangeSerializer(serializers.Serializer):
    image = StrictPrimaryKeyRelatedField(queryset=Image.objects.all())
    value = LabelValueField()


class LabelBatchSerializer(serializers.Serializer):
    labels = LabelChangeSerializer(many=True, allow_empty=False, max_length=5000)


class LabelBatchResultSerializer(serializers.Serializer):
    written = serializers.IntegerField(help_text="how many labels changed (a label set to its own value is not)")
    labels = serializers.IntegerField(help_text="how many labels were sent")
