from django.urls import path
from rest_framework.routers import DefaultRouter

from . import api, views

router = DefaultRouter()
router.register("queries", api.QueryViewSet, basename="query")
router.register("taxa", api.TaxonViewSet, basename="taxon")
router.register("images", api.ImageViewSet, basename="image")
router.register("labels", api.LabelViewSet, basename="label")

urlpatterns = [
    path("", views.home, name="home"),
    path("exports/<str:name>", views.download_export, name="download-export"),
]
