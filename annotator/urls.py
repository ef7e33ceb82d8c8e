from django.urls import path
from rest_framework.routers import DefaultRouter

from catalog import api as catalog_api

from . import api, labeling_views, views

router = DefaultRouter()
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
    path("dashboard/", views.dashboard, name="dashboard"),
    path("dashboard/<int:query_id>/", views.dashboard_query, name="dashboard-query"),
    path("exports/<str:name>", views.download_export, name="download-export"),
]
