"""The benchmark's files for staff: the INQUIRE CSVs, agreement.json and completeness.json, streamed."""

from collections.abc import Callable
from typing import Any

from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import (
    Http404,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseBase,
    JsonResponse,
    StreamingHttpResponse,
)
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from annotator.completeness import claims
from annotator.inquire.exporters import AGREEMENT_FILE, COMPLETENESS_FILE, EXPORTS, csv_lines, export_lines
from annotator.labels import visibility
from annotator.team import agreement, costs
from common.http import SignedInRequest


@login_required
@permission_required("annotator.export_labels", raise_exception=True)
def download_export(request: SignedInRequest, name: str) -> HttpResponseBase:
    """Stream one INQUIRE CSV, or agreement.json (optionally for ?query=ID&query=ID only); a CSV is never built
    whole in memory. Refused, with the reason, to a viewer for whom an overlap sample still waits (visibility)."""
    if name not in EXPORTS and name not in FIGURES:
        raise Http404(f"No export named {name}; the exports are {', '.join([*EXPORTS, *FIGURES])}.")
    try:
        query_ids = _query_ids(request.GET.getlist("query"))
    except ValueError as bad:
        return HttpResponseBadRequest(str(bad))
    if refused := visibility.of(request).refusal(query_ids):
        raise PermissionDenied(refused)  # Quire's 403 page says it, with the way back
    figures = FIGURES[name](query_ids) if name in FIGURES else None
    if name in FIGURES and figures is None:  # a heavy one, still being computed in the background
        return _computing(request, name)
    if failed := costs.failure(figures):
        return HttpResponse(failed, status=503, content_type="text/plain; charset=utf-8")
    if name.endswith(".json"):  # what export_inquire writes beside the CSVs, at full precision
        response = JsonResponse(figures, json_dumps_params={"indent": 2}, safe=False)
        response["Content-Disposition"] = f'attachment; filename="{export_file_name(name, query_ids)}"'
        return response
    return _csv(name, query_ids, figures, for_spreadsheets=request.GET.get("spreadsheet_safe") in ("1", "on"))


def _query_ids(raw: list[str]) -> list[int] | None:
    """?query=ID&query=ID as sorted ids; None for every query; ValueError saying what to fix for a value that is not
    a query id."""
    if not raw:
        return None
    if not all(value.isascii() and value.isdigit() and int(value) < 2**63 for value in raw):
        raise ValueError("query must be a query id (a whole number).")
    return sorted({int(value) for value in raw})


def _csv(name: str, query_ids: list[int] | None, figures: Any, *, for_spreadsheets: bool) -> HttpResponseBase:
    """A CSV streamed: an INQUIRE export read row by row, or the team's figures (`figures`) as rows."""
    lines = (
        (line.encode() for line in csv_lines(costs.csv_rows(figures), for_spreadsheets=for_spreadsheets))
        if figures is not None
        else export_lines(name, query_ids, for_spreadsheets=for_spreadsheets)
    )
    streamed = StreamingHttpResponse(lines, content_type="text/csv; charset=utf-8")
    file_name = export_file_name(name, query_ids)
    if for_spreadsheets:
        file_name = file_name.replace(".csv", "_spreadsheet.csv")
    streamed["Content-Disposition"] = f'attachment; filename="{file_name}"'
    return streamed


# The files of figures, besides the INQUIRE CSVs: what export_inquire writes beside them (the agreement, one
# completeness claim per query) and the team's cost and quality as JSON and as one CSV (a row per annotator and per
# query). The heavy ones (bootstrap intervals, Dawid-Skene) come as the background computed them, None while it
# works; the claims are read off the checks' stored decisions, in the request.
FIGURES: dict[str, Callable[[list[int] | None], Any]] = {
    AGREEMENT_FILE: agreement.cached_report,
    COMPLETENESS_FILE: claims.completeness_file,
    "team.json": costs.cached_report,
    "team.csv": costs.cached_report,
}
RETRY_SECONDS = 3


def _computing(request: SignedInRequest, name: str) -> HttpResponse:
    """202: the file's figures are being computed in the background; the page asks again by itself (a script reads
    Retry-After), and the download starts once they are there."""
    answer = render(request, "annotator/computing.html", {"name": name, "retry": RETRY_SECONDS}, status=202)
    answer["Retry-After"] = str(RETRY_SECONDS)
    return answer


def export_file_name(name: str, query_ids: list[int] | None) -> str:
    """inquire_labels.csv for every query; inquire_labels_q7.csv (or _q7_q12) for some, so that
    downloads of different queries never overwrite each other."""
    if not query_ids:
        return name
    stem, suffix = name.rsplit(".", 1)
    ids = "_".join(f"q{query_id}" for query_id in query_ids[:5]) + ("_more" if len(query_ids) > 5 else "")
    return f"{stem}_{ids}.{suffix}"


@login_required
@permission_required("annotator.export_labels", raise_exception=True)
def download_export_choice(request: SignedInRequest) -> HttpResponseBase:
    """The export form (a file, a query, "for a spreadsheet"): on to the file's own address."""
    name = request.GET.get("name", "")
    if name not in EXPORTS:
        raise Http404(f"No export named {name}; the exports are {', '.join(EXPORTS)}.")
    params = {key: request.GET[key] for key in ("query", "spreadsheet_safe") if request.GET.get(key)}
    return redirect(
        f"{reverse('download-export', args=[name])}?{urlencode(params)}"
        if params
        else reverse("download-export", args=[name])
    )
