"""The collection in the admin: taxa, image roots and images, each image with its thumbnail and file."""

from typing import Any

from django.contrib import admin
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from .models import Image, ImageRoot, Taxon


@admin.register(Taxon)
class TaxonAdmin(admin.ModelAdmin):
    list_display = ["id", "scientific_name", "common_name", "supercategory", "family"]
    search_fields = ["scientific_name", "common_name", "=id"]
    list_filter = ["supercategory", "kingdom"]


@admin.register(ImageRoot)
class ImageRootAdmin(admin.ModelAdmin):
    """Read-only: a root is where files are served from, so only the operator's import commands
    (import_inat --images-root, import_folder) make them, within QUIRE_IMAGE_ROOTS when it is set."""

    list_display = ["id", "path"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["id", "file_name", "taxon", "observed_on", "license"]
    search_fields = ["=id", "file_name"]
    raw_id_fields = ["taxon"]
    list_select_related = ["taxon"]
    readonly_fields = ["picture"]
    # Counting 5M rows on every page is the slow part of a big changelist.
    show_full_result_count = False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        """Never from the admin: an image carries the judgments and label history of every query (deleting it
        would take them along), and its delete page listed them, judged or not, to anyone allowed to delete."""
        return False

    @admin.display(description="image")
    def picture(self, image: Image) -> str:
        if not image.pk:
            return "–"
        return format_html(
            '<img src="{}" alt="image {}" style="max-height: 16rem">',
            reverse("image-file", args=[image.pk, "thumb"]),
            image.pk,
        )
