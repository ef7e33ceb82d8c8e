from django.contrib import admin
from django.db.models import Count, Q

from .models import Image, ImageRoot, Label, LabelEvent, LabelValue, Query, Taxon


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


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    list_display = ["id", "text", "split", "status", "fully_labeled", "labeled", "relevant"]
    list_filter = ["split", "status", "fully_labeled", "supercategory"]
    search_fields = ["=id", "text", "category"]
    list_editable = ["status", "fully_labeled"]

    def get_queryset(self, request):
        return (
            super()
            .get_queryset(request)
            .annotate(
                labeled_count=Count("labels"),
                relevant_count=Count("labels", filter=Q(labels__value=LabelValue.RELEVANT)),
            )
        )

    @admin.display(ordering="labeled_count", description="# labeled")
    def labeled(self, query):
        return query.labeled_count

    @admin.display(ordering="relevant_count", description="# relevant")
    def relevant(self, query):
        return query.relevant_count


class ViewOnlyAdmin(admin.ModelAdmin):
    """Labels change through annotator.labels, which keeps the history; the
    admin shows labels and their history but never writes them behind its back."""

    show_full_result_count = False

    def has_add_permission(self, request):
        return False

    def has_change_permission(self, request, obj=None):
        return False


@admin.register(Label)
class LabelAdmin(ViewOnlyAdmin):
    list_display = ["query", "image", "value", "annotator", "updated_at"]
    list_filter = ["value"]
    search_fields = ["=query__id", "=image__id"]
    list_select_related = ["query", "annotator"]


@admin.register(LabelEvent)
class LabelEventAdmin(ViewOnlyAdmin):
    list_display = ["created_at", "query", "image", "old_value", "new_value", "user", "source"]
    list_filter = ["source", "new_value"]
    search_fields = ["=query__id", "=image__id"]
    list_select_related = ["query", "user"]

    def has_delete_permission(self, request, obj=None):
        return False
