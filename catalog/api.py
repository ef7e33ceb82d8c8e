"""REST API of the collection: taxa and images, read-only."""

from typing import Any

from django.db.models import Q, QuerySet
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets

from common.api_params import BAD_PARAMETERS, NOT_FOUND, ByIdCursorPagination, counted, int_param, text_param

from .models import Image, Taxon
from .serializers import ImageSerializer, TaxonSerializer


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("search", OpenApiTypes.STR, description="common or scientific name")],
        responses={200: TaxonSerializer(many=True), **BAD_PARAMETERS},
    ),
    retrieve=extend_schema(responses={200: TaxonSerializer, **NOT_FOUND}),
)
class TaxonViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TaxonSerializer

    def get_queryset(self) -> QuerySet[Any]:
        taxa = Taxon.objects.all()
        if text := text_param(self.request, "search"):
            taxa = taxa.filter(Q(scientific_name__icontains=text) | Q(common_name__icontains=text))
        return taxa


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("taxon", counted(0, 2**31 - 1))],
        responses={200: ImageSerializer(many=True), **BAD_PARAMETERS},
    ),
    retrieve=extend_schema(responses={200: ImageSerializer, **NOT_FOUND}),
)
class ImageViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ImageSerializer
    pagination_class = ByIdCursorPagination

    def get_queryset(self) -> QuerySet[Any]:
        images = Image.objects.all()
        if (taxon := int_param(self.request, "taxon", high=2**31)) is not None:
            images = images.filter(taxon_id=taxon)
        return images
