from django.contrib import admin

from .models import Image, ImageRoot, Taxon


@admin.register(Taxon)
class TaxonAdmin(admin.ModelAdmin):
    list_display = ["id", "scientific_name", "common_name", "supercategory", "family"]
    search_fields = ["scientific_name", "common_name", "=id"]
    list_filter = ["supercategory", "kingdom"]


@admin.register(ImageRoot)
class ImageRootAdmin(admin.ModelAdmin):
    list_display = ["id", "path"]


@admin.register(Image)
class ImageAdmin(admin.ModelAdmin):
    list_display = ["id", "file_name", "taxon", "observed_on", "license"]
    search_fields = ["=id", "file_name"]
    raw_id_fields = ["taxon"]
    list_select_related = ["taxon"]
    # Counting 5M rows on every page is the slow part of a big changelist.
    show_full_result_count = False
