"""The API's view of taxa and images (read only)."""

from rest_framework import serializers

from .models import Image, Taxon


class TaxonSerializer(serializers.ModelSerializer):
    class Meta:
        model = Taxon
        fields = [
            "id",
            "scientific_name",
            "common_name",
            "kingdom",
            "phylum",
            "class_name",
            "order",
            "family",
            "genus",
            "specific_epithet",
            "image_dir_name",
            "supercategory",
        ]


class ImageSerializer(serializers.ModelSerializer):
    class Meta:
        model = Image
        fields = [
            "id",
            "file_name",
            "width",
            "height",
            "taxon",
            "latitude",
            "longitude",
            "location_uncertainty",
            "observed_on",
            "license",
            "rights_holder",
        ]
