"""The collection's pages: taxon suggestions for the filters, and image files (thumbnails and full size)."""

from django.urls import path

from . import views

urlpatterns = [
    path("taxa/suggest", views.suggest_taxa, name="suggest-taxa"),
    path("images/<int:image_id>/<str:size>", views.image_file, name="image-file"),
]
