"""Labeling in the admin: queries with their assignments and examples, labels and their history (read only),
overlap samples and the staff's actions."""

from typing import Any

from django.contrib import admin, messages
from django.contrib.admin.views.main import ChangeList
from django.db.models import QuerySet
from django.http import HttpRequest

from annotator import labels
from annotator.labels import selectors, visibility
from annotator.labels.selectors import CountedQuery
from annotator.models import (
    Assignment,
    CompletenessCheck,
    ImportBatch,
    Judgment,
    Label,
    LabelEvent,
    LabelSource,
    Query,
    QueryExample,
    RerankJob,
)
from annotator.team import overlap
from annotator.web.labeling_forms import ExampleInlineForm
from common.http import user_of
from search.facade import SearchUnavailable


class ExampleInline(admin.TabularInline):
    """The example images annotators see beside the grid, with the query's guidelines."""

    model = QueryExample
    form = ExampleInlineForm  # an uploaded file meets the labeling page's checks
    raw_id_fields = ["image"]
    extra = 1


class AssignmentInline(admin.TabularInline):
    """Who works on the query: shown on the dashboard."""

    model = Assignment
    extra = 1
    autocomplete_fields = ["annotator"]


@admin.register(Query)
class QueryAdmin(admin.ModelAdmin):
    inlines = [AssignmentInline, ExampleInline]
    actions = ["draw_overlap", "open_overlap"]
    list_display = ["id", "text", "split", "status", "fully_labeled", "locked", "labeled", "relevant"]
    list_filter = ["split", "status", "fully_labeled", "locked", "supercategory"]
    search_fields = ["=id", "text", "category"]
    list_editable = ["status", "fully_labeled"]

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return selectors.with_label_counts(super().get_queryset(request))

    def get_changelist_instance(self, request: HttpRequest) -> ChangeList:
        """The list's counts as the viewer may see them (annotator.labels.visibility), like the dashboard's."""
        changelist = super().get_changelist_instance(request)
        visibility.of(request).count_queries(list(changelist.result_list))
        return changelist

    @admin.action(description="Draw the overlap sample (from each query's overlap share, rank and judgments)")
    def draw_overlap(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        added = 0
        for query in queryset:
            if query.overlap_fraction is None and query.overlap_top is None:
                self.message_user(
                    request, f"Query {query.pk}: set its overlap share or rank first.", level=messages.WARNING
                )
                continue
            try:
                added += overlap.draw_sample(
                    query, fraction=query.overlap_fraction, top=query.overlap_top, wanted=query.judgments_wanted
                )
            except (ValueError, SearchUnavailable) as error:
                self.message_user(request, f"Query {query.pk}: {error}", level=messages.ERROR)
        self.message_user(request, f"{added} images added to the overlap samples.")

    @admin.action(
        description="Open the overlap sample (its judged images show their votes to everyone)", permissions=["change"]
    )
    def open_overlap(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        opened = waiting = 0
        for query in queryset:
            now, still = overlap.open_sample(query)
            opened, waiting = opened + now, waiting + still
        self.message_user(
            request,
            f"{opened} images of the overlap samples opened; {waiting} still wait for a judgment and stay sealed.",
        )

    @admin.display(ordering="labeled", description="# labeled")
    def labeled(self, query: CountedQuery) -> int:
        return int(query.labeled)

    @admin.display(ordering="relevant", description="# relevant")
    def relevant(self, query: CountedQuery) -> int:
        return int(query.relevant)


class ViewOnlyAdmin(admin.ModelAdmin):
    """Labels change through annotator.labels, which keeps the history; the
    admin shows labels and their history but never writes them behind its back."""

    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Any]:
        return self.visible(request, super().get_queryset(request))

    def visible(self, request: HttpRequest, found: QuerySet[Any]) -> QuerySet[Any]:
        """What the viewer may see of these rows (annotator.labels.visibility): the label tables say so."""
        return found

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(Label)
class LabelAdmin(ViewOnlyAdmin):
    """Deleting a final label here clears the image for everyone (staff only): every judgment goes, the
    image goes back to "not yet seen", and the history records who cleared each judgment from the admin."""

    list_display = ["query", "image", "value", "decided_by", "annotator", "updated_at"]
    list_filter = ["value", "decided_by"]
    search_fields = ["=query__id", "=image__id"]
    list_select_related = ["query", "annotator"]

    def visible(self, request: HttpRequest, found: QuerySet[Any]) -> QuerySet[Any]:
        return visibility.of(request).labels(found)

    def delete_model(self, request: HttpRequest, obj: Any) -> None:
        labels.clear_labels([obj], user=user_of(request), source=LabelSource.ADMIN)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Any]) -> None:
        cleared = labels.clear_labels(list(queryset), user=user_of(request), source=LabelSource.ADMIN)
        messages.info(request, f"{cleared} labels cleared for every annotator; the label history keeps each judgment.")


@admin.register(LabelEvent)
class LabelEventAdmin(ViewOnlyAdmin):
    list_display = [
        "created_at",
        "query",
        "image",
        "old_value",
        "new_value",
        "user",
        "source",
        "lead_time_ms",
        "import_batch",
    ]
    list_filter = ["source", "new_value", "user", "query"]
    search_fields = ["=query__id", "=image__id"]
    list_select_related = ["query", "user", "import_batch"]
    ordering = ["-id"]  # newest first

    def visible(self, request: HttpRequest, found: QuerySet[Any]) -> QuerySet[Any]:
        return visibility.of(request).judged(found)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(ImportBatch)
class ImportBatchAdmin(ViewOnlyAdmin):
    list_display = ["id", "kind", "file_name", "user", "rows", "labels_changed", "created_at"]

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


@admin.register(RerankJob)
class RerankJobAdmin(ViewOnlyAdmin):
    """Vision-model jobs (reranks, judge panels, VisRet drawings): progress, requests and tokens spent."""

    list_display = [
        "id", "query", "method", "model", "status", "done", "total", "asked", "prompt_tokens", "completion_tokens",
        "started_by", "created_at", "finished_at",
    ]  # fmt: skip
    list_filter = ["status", "method", "model"]
    search_fields = ["=query__id"]
    list_select_related = ["query", "started_by"]


@admin.register(CompletenessCheck)
class CompletenessCheckAdmin(ViewOnlyAdmin):
    """Completeness checks, a query's and the benchmark's, as drawn and decided (annotator.completeness.checks): read
    here, drawn from the side pane, the dashboard, the API or `manage.py completeness --draw`. A check's frames and
    sample are frozen: nothing edits them."""

    list_display = [
        "claim", "scope", "ordinal", "status", "target_recall", "confidence", "sampled_from", "found", "positives",
        "recall_lower_bound", "drawn_by", "created_at", "decided_at",
    ]  # fmt: skip
    list_filter = ["claim", "status"]
    search_fields = ["=query__id", "=strata__query__id"]
    list_select_related = ["query", "drawn_by"]

    def visible(self, request: HttpRequest, found: QuerySet[Any]) -> QuerySet[Any]:
        # A check's figures are read off every judgment of its frames: not for a viewer judging one of them blind.
        return found.exclude(strata__query_id__in=list(visibility.of(request).sealed))


@admin.register(Judgment)
class JudgmentAdmin(ViewOnlyAdmin):
    """Every annotator's own label (read only: they change on the labeling page, the API or an import)."""

    list_display = ["query", "image", "annotator", "value", "source", "lead_time_ms", "updated_at"]
    list_filter = ["value", "source"]
    search_fields = ["=query__id", "=image__id", "annotator__username"]
    list_select_related = ["query", "annotator"]

    def visible(self, request: HttpRequest, found: QuerySet[Any]) -> QuerySet[Any]:
        return visibility.of(request).judged(found)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False
