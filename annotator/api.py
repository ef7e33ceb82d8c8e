"""REST API: queries, taxa and images read-only; labels read/write through annotator.labels."""
from django.db.models import Q
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.exceptions import ValidationError
from rest_framework.pagination import CursorPagination
from rest_framework.response import Response

from . import labels
from .models import Image, Label, LabelSource, Query, Taxon
from .serializers import (
    ImageSerializer,
    LabelSerializer,
    LabelValueSerializer,
    QuerySerializer,
    TaxonSerializer,
)


class ByIdCursorPagination(CursorPagination):
    """Paging without COUNT(*): a count over 5M images costs more than the page itself."""

    ordering = "id"
    page_size = 100
    page_size_query_param = "page_size"
    max_page_size = 1000


def _int_param(request, name):
    value = request.query_params.get(name)
    if value is None or value == "":
        return None
    try:
        return int(value)
    except ValueError:
        raise ValidationError({name: f"must be a whole number, not {value!r}"}) from None


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("split", OpenApiTypes.STR, enum=Query.Split.values),
            OpenApiParameter("status", OpenApiTypes.STR, enum=Query.Status.values),
        ]
    )
)
class QueryViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = QuerySerializer

    def get_queryset(self):
        queries = Query.objects.all()
        for field in ("split", "status"):
            if value := self.request.query_params.get(field):
                queries = queries.filter(**{field: value})
        return queries


@extend_schema_view(
    list=extend_schema(parameters=[OpenApiParameter("search", OpenApiTypes.STR, description="common or scientific name")])
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
        if (taxon := _int_param(self.request, "taxon")) is not None:
            images = images.filter(taxon_id=taxon)
        return images


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("query", OpenApiTypes.INT),
            OpenApiParameter("image", OpenApiTypes.INT),
            OpenApiParameter("value", OpenApiTypes.STR),
        ]
    ),
    create=extend_schema(description="Set the label of (query, image); posting an existing pair changes its value."),
    partial_update=extend_schema(request=LabelValueSerializer),
    update=extend_schema(request=LabelValueSerializer),
    destroy=extend_schema(description="Remove a label: the image goes back to not yet seen. The history keeps it."),
)
class LabelViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = LabelSerializer
    pagination_class = ByIdCursorPagination

    def get_queryset(self):
        found = Label.objects.select_related("annotator")
        for field in ("query", "image"):
            if (value := _int_param(self.request, field)) is not None:
                found = found.filter(**{f"{field}_id": value})
        if value := self.request.query_params.get("value"):
            found = found.filter(value=value)
        return found

    def create(self, request, *args, **kwargs):
        serializer = self.get_serializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        query, image = serializer.validated_data["query"], serializer.validated_data["image"]
        existed = Label.objects.filter(query=query, image=image).exists()
        label, _ = labels.set_label(
            query_id=query.id,
            image_id=image.id,
            value=serializer.validated_data["value"],
            user=request.user,
            source=LabelSource.API,
        )
        return Response(
            self.get_serializer(label).data, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED
        )

    def update(self, request, *args, **kwargs):
        label = self.get_object()
        serializer = LabelValueSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        label, _ = labels.set_label(
            query_id=label.query_id,
            image_id=label.image_id,
            value=serializer.validated_data["value"],
            user=request.user,
            source=LabelSource.API,
        )
        return Response(self.get_serializer(label).data)

    def destroy(self, request, *args, **kwargs):
        label = self.get_object()
        labels.clear_label(query_id=label.query_id, image_id=label.image_id, user=request.user, source=LabelSource.API)
        return Response(status=status.HTTP_204_NO_CONTENT)
