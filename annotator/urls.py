from django.urls import path
from rest_framework.reverse import reverse
from rest_framework.routers import DefaultRouter

from catalog import api as catalog_api

from . import api, labeling_views, views


class QuireRouter(DefaultRouter):
    """DRF's router whose root page also links the OpenAPI schema and its browsable docs."""

    class APIRootView(DefaultRouter.APIRootView):
        """Quire's REST API. Log in with a session; the docs list every endpoint, its parameters and its answers."""

        def get(self, request, *args, **kwargs):
            response = super().get(request, *args, **kwargs)
            response.data = {
                **response.data,
                "schema": reverse("api-schema", request=request),
                "docs": reverse("api-docs", request=request),
            }
            return response


router = QuireRouter()
router.register("queries", api.QueryViewSet, basename="query")
router.register("taxa", catalog_api.TaxonViewSet, basename="taxon")
router.register("images", catalog_api.ImageViewSet, basename="image")
router.register("labels", api.LabelViewSet, basename="label")

urlpatterns = [
    path("", views.home, name="home"),
    path("queries/<int:query_id>/", labeling_views.label_page, name="label"),
    path("queries/<int:query_id>/results", labeling_views.results_fragment, name="results"),
    path("queries/<int:query_id>/labels", labeling_views.save_label, name="save-label"),
    path("queries/<int:query_id>/submit", labeling_views.submit, name="submit"),
    path("queries/<int:query_id>/examples/", labeling_views.upload_example, name="upload-example"),
    path("queries/<int:query_id>/examples/<int:example_id>", labeling_views.example_file, name="example-file"),
    path("queries/<int:query_id>/rerank", labeling_views.start_rerank, name="start-rerank"),
    path("queries/<int:query_id>/rerank-status", labeling_views.rerank_status, name="rerank-status"),
    path("queries/<int:query_id>/drawings/<int:drawing_id>", labeling_views.drawing_file, name="drawing-file"),
    path("queries/<int:query_id>/tracking", labeling_views.save_tracking, name="save-tracking"),
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/<int:query_id>/", views.dashboard_query, name="dashboard-query"),
    path("exports/", views.download_export_choice, name="download-export-choice"),
    path("exports/<str:name>", views.download_export, name="download-export"),
]
