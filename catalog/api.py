"""REST API of the collection: taxa and images, read-only."""

from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination

from .models import Image, Taxon
from .serializers import ImageSerializer, TaxonSerializer


class ByIdCursorPagination(CursorPagination):
    """Paging without COUNT(*): a count over 5M images costs more than the page itself."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


def int_param(request, name):
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValidationError({name: f"must be a whole number, not {value!r}"}) from None


@extend_schema_view(
    list=extend_schema(
        parameters=[OpenApiParameter("search", OpenApiTypes.STR, description="common or scientific name")]
    )
)
class TaxonViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = TaxonSerializer

    def get_queryset(self):
        taxa = Taxon.objects.all()
        if text := self.request.query_params.get("search", "").strip():
            taxa = taxa.filter(Q(scientific_name__icontains=text) | Q(common_name__icontains=text))
        return taxa


@extend_schema_view(list=extend_schema(parameters=[OpenApiParameter("taxon", OpenApiTypes.INT)]))
class ImageViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = ImageSerializer
    pagination_class = ByIdCursorPagination

    def get_queryset(self):
        images = Image.objects.all()
        if (taxon := int_param(self.request, "taxon")) is not None:
            images = images.filter(taxon_id=taxon)
        return images
