"""Quire's REST API: one router for every app's viewsets, wired here in the project (apps know only
their own endpoints)."""

from typing import Any

from rest_framework.request import Request
from rest_framework.response import Response
from rest_framework.reverse import reverse
from rest_framework.routers import APIRootView as RootView
from rest_framework.routers import DefaultRouter

from annotator.api.benchmark import BenchmarkCheckViewSet
from annotator.api.team import TeamViewSet
from annotator.api.views import LabelViewSet, QueryViewSet
from catalog.api import ImageViewSet, TaxonViewSet


class QuireRouter(DefaultRouter):
    """DRF's router whose root page also links the OpenAPI schema and its browsable docs."""

    class APIRootView(RootView):
        """Quire's REST API. Log in with a session; the docs list every endpoint, its parameters and its answers."""

        def get(self, request: Request, *args: Any, **kwargs: Any) -> Response:
            response = super().get(request, *args, **kwargs)
            response.data = {
                **response.data,
                "schema": reverse("api-schema", request=request),
                "docs": reverse("api-docs", request=request),
            }
            return response


router = QuireRouter()
router.register("queries", QueryViewSet, basename="query")
router.register("taxa", TaxonViewSet, basename="taxon")
router.register("images", ImageViewSet, basename="image")
router.register("labels", LabelViewSet, basename="label")
router.register("completeness/benchmark", BenchmarkCheckViewSet, basename="benchmark-check")
router.register("team", TeamViewSet, basename="team")
