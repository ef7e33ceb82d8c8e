"""The releases page for staff: every release with its figures, each file downloadable, two releases compared, and
a new release made in the background (its steps shown while it runs)."""

from pathlib import Path
from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import FileResponse, Http404, HttpResponseBase
from django.shortcuts import redirect, render
from django.views.decorators.http import require_GET, require_http_methods

from annotator.labels import visibility
from annotator.models import Query, Release, ReleaseJob
from annotator.releases import card as release_card
from annotator.releases import files as release_files
from annotator.releases import publish as releases
from common import held
from common.background import QueueUnavailable
from common.http import SignedInRequest

CREATE = "annotator.add_release"
# The files a reader wants first; the page links every file of a release, these first, then the rest by name.
FILES = ("README.md", "croissant.json", "qrels.txt", "qrels.parquet", "inquire_annotations.csv", "SHA256SUMS")
# What a browser shows as it is (a link opens it, `?download=1` saves it); the card (Markdown) is rendered; anything
# else (Parquet) is only downloaded.
SHOWN = {".json": "application/json", ".txt": "text/plain", ".csv": "text/plain", ".tsv": "text/plain"}
VIEW = "annotator.view_release"


@login_required
@permission_required(VIEW, raise_exception=True)
@require_http_methods(["GET", "POST"])
def releases_page(request: SignedInRequest) -> HttpResponseBase:
    shown: dict[str, Any] = {
        "releases": [_with_files(release) for release in Release.objects.select_related("created_by")],
        "jobs": _with_workers(list(ReleaseJob.objects.all()[:10])),
        "splits": Query.Split.values,
    }
    if request.method == "POST":
        if not request.user.has_perm(CREATE):
            raise PermissionDenied("Making a release needs the permission to add releases: ask staff.")
        status, error = _start(request)
        if not error:
            return redirect("releases")
        again = {**shown, "error": error, "form": request.POST}
        return render(request, "annotator/releases.html", again, status=status)
    compared = None
    if request.GET.get("from") and request.GET.get("to"):
        if sealed := visibility.of(request).refusal():
            raise PermissionDenied(sealed)
        try:
            compared = releases.diff(releases.get(request.GET["from"]), releases.get(request.GET["to"]))
        except releases.BadRelease as bad:
            return render(request, "annotator/releases.html", {**shown, "error": str(bad)}, status=404)
    # A GET only reads: a job whose worker died is reaped by beat (Celery's, or the embedded server's: common/beat.py).
    running = any(job.status in (ReleaseJob.Status.QUEUED, ReleaseJob.Status.RUNNING) for job in shown["jobs"])
    return render(request, "annotator/releases.html", {**shown, "diff": compared, "running": running})


def _with_files(release: Release) -> Release:
    """The release, with `files`: every file its SHA256SUMS lists and that file, in the order a reader wants."""
    folder = Path(release.folder)
    try:
        names = [*release_files.listed(folder / releases.SUMS), releases.SUMS]
    except OSError:  # its folder is gone or unreadable: the page still lists the release, with no file to open
        names = []
    first = [name for name in FILES if name in names]
    release.files = first + sorted(set(names) - set(first))  # type: ignore[attr-defined]
    return release


def _with_workers(jobs: list[ReleaseJob]) -> list[ReleaseJob]:
    """The jobs, each running one marked `waiting_for_worker` where no live worker holds it (its worker died): the
    page says so instead of "running" until a worker takes it up again or the reaper marks it failed."""
    for job in jobs:
        job.waiting_for_worker = job.status == ReleaseJob.Status.RUNNING and not held.is_held(releases.JOB_KIND, job.pk)  # type: ignore[attr-defined]
    return jobs


def _start(request: SignedInRequest) -> tuple[int, str]:
    """Queue the release the form asks for: (status, "") or (the refusal's status, its sentence)."""
    raw_ids = [part.strip() for part in request.POST.get("queries", "").split(",") if part.strip()]
    if not all(part.isascii() and part.isdigit() and len(part) < 19 for part in raw_ids):
        return 400, "Queries are query ids separated by commas, e.g. 3, 7, 12 (or none for every query)."
    try:
        job = releases.start_job(
            request.POST.get("name", "").strip(), query_ids=[int(part) for part in raw_ids],
            splits=request.POST.getlist("split"), notes=request.POST.get("notes", ""), user=request.user,
        )  # fmt: skip
    except releases.BadRelease as bad:
        return 400, str(bad)
    except QueueUnavailable as error:
        return 503, str(error)
    messages.success(request, f"Making release {job.name}: its steps show below.")
    return 200, ""


@login_required
@permission_required(VIEW, raise_exception=True)
@require_GET
def release_file(request: SignedInRequest, name: str, file_name: str) -> HttpResponseBase:
    """One file of a release, streamed from its folder: only the files its SHA256SUMS lists, and that file itself."""
    try:
        release = releases.get(name)
    except releases.BadRelease as bad:
        raise Http404(str(bad)) from None
    if refused := visibility.of(request).refusal(release.query_ids):
        raise PermissionDenied(refused)
    folder = Path(release.folder)
    if file_name not in {*release_files.listed(folder / releases.SUMS), releases.SUMS}:
        raise Http404(f"Release {release.name} has no file {file_name[:100]!r}: its files are listed on the page.")
    path = folder / file_name
    download = f"{release.name}-{file_name}"
    if request.GET.get("download") == "1":
        return FileResponse(path.open("rb"), as_attachment=True, filename=download)
    if path.suffix == ".md":
        card = release_card.as_html(path.read_text(encoding="utf-8"))
        shown = {"release": release, "file_name": file_name, "card": card}
        return render(request, "annotator/release_card.html", shown)
    kind = SHOWN.get(path.suffix, "text/plain" if file_name == releases.SUMS else "")
    if not kind:
        return FileResponse(path.open("rb"), as_attachment=True, filename=download)
    answer = FileResponse(path.open("rb"), content_type=f"{kind}; charset=utf-8")
    answer["Content-Disposition"] = f'inline; filename="{download}"'
    return answer
