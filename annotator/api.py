"""REST API: queries read-only; labels read/write through annotator.labels. (Taxa and images: catalog/api.py.)"""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.response import Response

from catalog.api_params import BAD_PARAMETERS, NOT_FOUND, ByIdCursorPagination, choice_param, int_param

from . import labels
from .models import Label, LabelSource, LabelValue, Query
from .serializers import LabelSerializer, LabelValueSerializer, QuerySerializer


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("split", OpenApiTypes.STR, enum=Query.Split.values),
            OpenApiParameter("status", OpenApiTypes.STR, enum=Query.Status.values),
        ],
        responses={200: QuerySerializer(many=True), **BAD_PARAMETERS},
    ),
    retrieve=extend_schema(responses={200: QuerySerializer, **NOT_FOUND}),
)
class QueryViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = QuerySerializer

    def get_queryset(self):
        queries = Query.objects.all()
        for field in ("split", "status"):
            if value := choice_param(self.request, field, getattr(Query, field.capitalize()).values):
                queries = queries.filter(**{field: value})
        return queries


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("query", OpenApiTypes.INT),
            OpenApiParameter("image", OpenApiTypes.INT),
            OpenApiParameter("value", OpenApiTypes.STR, enum=LabelValue.values),
        ],
        responses={200: LabelSerializer(many=True), **BAD_PARAMETERS},
    ),
    retrieve=extend_schema(responses={200: LabelSerializer, **NOT_FOUND}),
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
            if (value := int_param(self.request, field)) is not None:
                found = found.filter(**{f"{field}_id": value})
        if value := choice_param(self.request, "value", LabelValue.values):
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
