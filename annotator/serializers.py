from rest_framework import serializers

from .models import Image, Label, LabelValue, Query, Taxon


class TaxonSerializer(serializers.ModelSerializer):
    class Meta:
        model = Taxon
        fields = [
            "id", "scientific_name", "common_name", "kingdom", "phylum", "class_name", "order", "family", "genus",
            "specific_epithet", "image_dir_name", "supercategory",
        ]  # fmt: skip


class ImageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Image
        fields = [
            "id", "file_name", "width", "height", "taxon", "latitude", "longitude", "location_uncertainty",
            "observed_on", "license", "rights_holder",
        ]  # fmt: skip


class QuerySerializer(serializers.ModelSerializer):
    query_id = serializers.IntegerField(source="id", read_only=True)

    class Meta:
        model = Query
        fields = [
            "query_id", "text", "supercategory", "category", "iconic_group", "split", "status", "fully_labeled",
            "notes",
        ]  # fmt: skip


class LabelSerializer(serializers.ModelSerializer):
    annotator = serializers.SlugRelatedField(slug_field="username", read_only=True)

    class Meta:
        model = Label
        fields = ["id", "query", "image", "value", "annotator", "created_at", "updated_at"]
        read_only_fields = ["id", "annotator", "created_at", "updated_at"]
        # (query, image) may be posted again to change a label: the view turns
        # that into an update instead of a uniqueness error.
        validators = []


class LabelValueSerializer(serializers.Serializer):
    value = serializers.ChoiceField(choices=LabelValue.choices)
