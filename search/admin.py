"""Admin pages for embedding jobs and index builds: progress, rate, ETA, failures, and the buttons that start them."""

import datetime
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.db.models import Model
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect
from django.urls import URLPattern, path

from common import background

from . import jobs, map_jobs
from .exceptions import WeightsUnavailable
from .models import EmbeddingChunk, EmbeddingFailure, EmbeddingJob, IndexBuild, MapLayout
from .spec import configured_spec


class ReadOnlyAdmin(admin.ModelAdmin):
    """Jobs are written by the workers; the admin watches them."""

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return False


CHUNK_FIELDS = (
    "number",
    "first_image_id",
    "last_image_id",
    "size",
    "status",
    "attempts",
    "done",
    "failed",
    "worker",
    "finished_at",
)


class ChunkInline(admin.TabularInline):
    model = EmbeddingChunk
    fields = CHUNK_FIELDS
    readonly_fields = CHUNK_FIELDS
    extra = 0
    can_delete = False
    max_num = 0
    show_change_link = False


@admin.register(EmbeddingJob)
class EmbeddingJobAdmin(ReadOnlyAdmin):
    list_display = ["id", "model_name", "status", "progress", "failed", "images_per_second", "eta", "created_at"]
    list_filter = ["status", "model_name"]
    readonly_fields = [
        "model_name",
        "status",
        "total",
        "done",
        "failed",
        "chunk_size",
        "created_at",
        "started_at",
        "finished_at",
        "error",
    ]
    inlines = [ChunkInline]
    change_list_template = "admin/search/embeddingjob/change_list.html"

    @admin.display(description="done / total")
    def progress(self, job: EmbeddingJob) -> str:
        percent = 100 * job.processed / job.total if job.total else 100
        return f"{job.done:,} / {job.total:,} ({percent:.0f}%)"

    @admin.display(description="images/s")
    def images_per_second(self, job: EmbeddingJob) -> str:
        return f"{job.rate:,.1f}" if job.rate else "–"

    @admin.display(description="ETA")
    def eta(self, job: EmbeddingJob) -> str:
        seconds = job.eta_seconds
        return str(datetime.timedelta(seconds=round(seconds))) if seconds is not None else "–"

    def get_urls(self) -> list[URLPattern]:
        return [
            path("start/", self.admin_site.admin_view(self.start_view), name="search_embeddingjob_start"),
            path(
                "build-index/",
                self.admin_site.admin_view(self.build_index_view),
                name="search_embeddingjob_build_index",
            ),
        ] + super().get_urls()

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra_context = {
            **(extra_context or {}),
            "model_name": configured_spec().name,
            "running": EmbeddingJob.objects.filter(status__in=jobs.UNFINISHED).exists()
            or IndexBuild.objects.filter(status__in=jobs.UNFINISHED).exists(),
            "embedded_mode": settings.CELERY_TASK_ALWAYS_EAGER,
        }
        return super().changelist_view(request, extra_context)

    def start_view(self, request: HttpRequest) -> HttpResponse:
        """Start (or resume) an embedding job: POST only, staff only."""
        if request.method != "POST" or not request.user.has_perm("search.add_embeddingjob"):
            messages.error(request, "Starting an embedding job needs a POST by a user allowed to add embedding jobs.")
            return redirect("admin:search_embeddingjob_changelist")
        from .clip import check_weights  # loads open_clip: only when someone starts a job

        spec = configured_spec()
        try:
            check_weights(spec)
            job = jobs.start_embedding(spec=spec)
        except WeightsUnavailable as error:
            messages.error(request, str(error))
            return redirect("admin:search_embeddingjob_changelist")
        if job is None:
            messages.info(request, f"Nothing to embed: every image has a {spec.name} vector.")
        else:
            # Never inside this request: to the workers, or to the background thread in embedded mode.
            try:
                background.submit_on_commit("search.send_embedding_job", job.pk)
            except background.QueueUnavailable as error:
                messages.error(request, f"{error} (Embedding job {job.pk} waits; start it again once Redis is back.)")
                return redirect("admin:search_embeddingjob_changelist")
            messages.success(
                request,
                f"Embedding job {job.pk} started: {job.chunks.count()} chunks of {job.total:,} images. "
                "This page shows its progress.",
            )
        return redirect("admin:search_embeddingjob_changelist")

    def build_index_view(self, request: HttpRequest) -> HttpResponse:
        if request.method != "POST" or not request.user.has_perm("search.add_indexbuild"):
            messages.error(request, "Building the index needs a POST by a user allowed to add index builds.")
            return redirect("admin:search_embeddingjob_changelist")
        try:
            build = jobs.record_index_build()
        except ValueError as error:
            messages.error(request, str(error))
        else:
            try:
                background.submit_on_commit("search.build_index", build.pk)
            except background.QueueUnavailable as error:
                messages.error(request, str(error))
            else:
                messages.success(request, f"Index build {build.pk} started: Index builds shows when it is done.")
        return redirect("admin:search_embeddingjob_changelist")


@admin.register(EmbeddingFailure)
class EmbeddingFailureAdmin(ReadOnlyAdmin):
    list_display = ["image_id", "model_name", "reason", "job", "created_at"]
    list_filter = ["model_name"]
    search_fields = ["=image_id", "reason"]

    def has_delete_permission(self, request: HttpRequest, obj: Model | None = None) -> bool:
        return True  # deleting a failure lets the next job try that image again


@admin.register(IndexBuild)
class IndexBuildAdmin(ReadOnlyAdmin):
    list_display = [
        "id", "model_name", "backend", "kind", "built_kind", "status", "progress", "vectors", "created_at",
        "finished_at",
    ]  # fmt: skip
    list_filter = ["status", "backend", "built_kind"]
    readonly_fields = [
        "model_name",
        "backend",
        "kind",
        "built_kind",
        "status",
        "progress",
        "mode",
        "vectors",
        "created_at",
        "started_at",
        "finished_at",
        "error",
    ]

    @admin.display(description="progress")
    def progress(self, build: IndexBuild) -> str:
        """How far a load into Milvus is (a FAISS build has no steps to show)."""
        if not build.total:
            return "–"
        return f"{build.done:,} of {build.total:,} vectors ({100 * build.done // build.total}%)"


@admin.register(MapLayout)
class MapLayoutAdmin(ReadOnlyAdmin):
    """The map of the collection (search/layout.py): its jobs, their progress, and the button that starts one."""

    list_display = ["id", "model_name", "status", "mode", "progress", "points", "created_at", "finished_at"]
    list_filter = ["status", "model_name"]
    readonly_fields = [
        "model_name", "refit", "status", "mode", "progress", "points", "created_at", "started_at", "finished_at",
        "error",
    ]  # fmt: skip

    @admin.display(description="progress")
    def progress(self, job: MapLayout) -> str:
        if job.status == "queued":
            return "waiting for a worker"
        if not job.total:
            return "fitting the map on a sample" if job.status == "running" else "–"
        return f"{job.done:,} of {job.total:,} images placed ({100 * job.done // job.total}%)"

    def get_urls(self) -> list[URLPattern]:
        return [
            path("start/", self.admin_site.admin_view(self.start_view), name="search_maplayout_start"),
        ] + super().get_urls()

    def changelist_view(self, request: HttpRequest, extra_context: dict[str, Any] | None = None) -> HttpResponse:
        extra_context = {
            **(extra_context or {}),
            "model_name": configured_spec().name,
            "running": MapLayout.objects.filter(status__in=map_jobs.UNFINISHED).exists(),
            "embedded_mode": settings.CELERY_TASK_ALWAYS_EAGER,
        }
        return super().changelist_view(request, extra_context)

    def start_view(self, request: HttpRequest) -> HttpResponse:
        """Compute the map, or place new images on it (refit=1: a new map): POST only, staff only."""
        if request.method != "POST" or not request.user.has_perm("search.add_maplayout"):
            messages.error(request, "Computing the map needs a POST by a user allowed to add map layouts.")
            return redirect("admin:search_maplayout_changelist")
        model_name = configured_spec().name
        job = MapLayout.objects.filter(model_name=model_name, status__in=map_jobs.UNFINISHED).first()
        job = job or MapLayout.objects.create(model_name=model_name, refit=request.POST.get("refit") == "1")
        try:  # never inside this request: to the workers, or to the background thread in embedded mode
            background.submit_on_commit("search.map_layout", job.pk)
        except background.QueueUnavailable as error:
            messages.error(request, f"{error} (Map layout {job.pk} waits; start it again once Redis is back.)")
        else:
            messages.success(request, f"Map layout {job.pk} started: this page shows its progress.")
        return redirect("admin:search_maplayout_changelist")
