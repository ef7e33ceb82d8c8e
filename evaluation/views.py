"""Staff pages: upload a run (scored outside the request) and follow its scoring; see the tables and
plots, download them, compare two reports."""

import json
from functools import wraps
from typing import Any

from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.urls import reverse
from django_htmx.http import HttpResponseClientRedirect

from annotator.facade import release_names, sight_of
from common import background
from common.api_params import strict_id
from common.http import SignedInRequest, View

from . import plots, scoring
from .forms import EvaluateForm
from .models import SavedReport, SavedSimulation, Scoring
from .report import Report, compare


def labels_visible(view: View) -> View:
    """Scores and simulations are read off every final label: refused, with the reason, to a viewer who still
    waits on a blind overlap sample (annotator.labels.visibility), since a score would tell how the others voted."""

    @wraps(view)
    def wrapper(request: SignedInRequest, *args: Any, **kwargs: Any) -> HttpResponseBase:
        if refused := sight_of(request).refusal():
            raise PermissionDenied(refused)  # Quire's 403 page says it, with the way back
        answer: HttpResponseBase = view(request, *args, **kwargs)
        return answer

    return wrapper


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
@labels_visible
def index(request: SignedInRequest) -> HttpResponseBase:
    form = EvaluateForm(request.POST or None, request.FILES or None, releases=release_names())
    if request.method == "POST" and form.is_valid():
        # Scoring a large run takes minutes: answer 202 with the status page, which polls until done.
        try:
            job = scoring.start(form.cleaned_data, request.user)
        except background.QueueUnavailable as error:
            return HttpResponse(str(error), status=503, content_type="text/plain; charset=utf-8")
        response = _scoring_page(request, job, status=202)
        response["Content-Location"] = reverse("evaluation:scoring", args=[job.pk])
        return response
    return render(
        request,
        "evaluation/index.html",
        {
            "form": form,
            "scorings": Scoring.objects.exclude(status=Scoring.Status.DONE)[:20],
            "reports": SavedReport.objects.select_related("run")[:50],
            "simulations": SavedSimulation.objects.all()[:50],
        },
        status=400 if form.errors else 200,
    )


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
@labels_visible
def scoring_status(request: SignedInRequest, scoring_id: int) -> HttpResponseBase:
    """The status page of an uploaded run; htmx polls it, and is sent to the report once it is ready."""
    job = get_object_or_404(Scoring, pk=scoring_id)  # a GET only reads: a lost scoring is resumed by beat
    if request.htmx and job.status == Scoring.Status.DONE:
        return HttpResponseClientRedirect(reverse("evaluation:report", args=[job.report_id]))
    return _scoring_page(request, job)


def _scoring_page(request: SignedInRequest, job: Scoring, status: int = 200) -> HttpResponse:
    template = "evaluation/_scoring.html" if request.htmx else "evaluation/scoring.html"
    return render(request, template, {"job": job}, status=status)


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
@labels_visible
def report(request: SignedInRequest, report_id: int) -> HttpResponseBase:
    saved = get_object_or_404(SavedReport.objects.select_related("run"), pk=report_id)
    result = saved.result
    other = (
        SavedReport.objects.filter(pk=request.GET.get("compare") or 0).first()
        if strict_id(request.GET.get("compare", "")) is not None
        else None
    )
    comparison = scatter = None
    if other:
        comparison = compare(_as_report(result), _as_report(other.result), "ap")
        scatter = plots.scatter(
            [(row["b"], row["a"]) for row in comparison["per_query"]], x_label=str(other.run), y_label=str(saved.run)
        )
    bars = {
        column: plots.bars(
            {
                value: scores["ap"]
                for value, scores in table.items()
                if value != "mean_of_groups" and scores["ap"] is not None  # a group with no positives
            }
        )
        for column, table in result["groups"].items()
    }
    return render(
        request,
        "evaluation/report.html",
        {
            "saved": saved,
            "result": result,
            "bars": bars,
            "comparison": comparison,
            "scatter": scatter,
            "other": other,
            "others": SavedReport.objects.exclude(pk=saved.pk).select_related("run")[:50],
            "metrics": [name for name in result["overall"]],
        },
    )


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
@labels_visible
def download(request: SignedInRequest, report_id: int, kind: str) -> HttpResponseBase:
    if kind not in ("json", "csv"):
        return HttpResponse("Reports download as json or csv.", status=404)
    saved = get_object_or_404(SavedReport, pk=report_id)
    if kind == "json":
        return _attachment(json.dumps(saved.result, indent=2), "application/json", f"report-{saved.pk}.json")
    return _attachment(_as_report(saved.result).per_query_csv(), "text/csv; charset=utf-8", f"report-{saved.pk}.csv")


def _attachment(body: str, content_type: str, filename: str) -> HttpResponseBase:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _as_report(result: dict[str, Any]) -> Report:
    metrics = tuple(result["overall"])
    return Report(
        result["protocol"], result["k"], metrics, result["per_query"], result["warnings"], result.get("run", "")
    )


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
@labels_visible
def simulation(request: SignedInRequest, simulation_id: int) -> HttpResponseBase:
    """An oracle-annotator replay: medians per strategy, the per-query table, recall against labels."""
    saved = get_object_or_404(SavedSimulation, pk=simulation_id)
    result = saved.result
    strategies = result["settings"]["strategies"]
    target = f"labels_to_{round(100 * result['settings']['target'])}"
    return render(
        request,
        "evaluation/simulation.html",
        {
            "saved": saved,
            "result": result,
            "strategies": strategies,
            "baseline": strategies[0],
            "others": strategies[1:],
            "has_kinds": any(row.get("kind") for row in result["versus"]),
            "target_key": target,
            "plot": plots.recall_curves(result["curves"]),
        },
    )


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
@labels_visible
def simulation_download(request: SignedInRequest, simulation_id: int, kind: str) -> HttpResponseBase:
    if kind not in ("json", "svg"):
        return HttpResponse("Simulations download as json or svg.", status=404)
    saved = get_object_or_404(SavedSimulation, pk=simulation_id)
    if kind == "json":
        return _attachment(json.dumps(saved.result, indent=1), "application/json", f"simulation-{saved.pk}.json")
    return _attachment(plots.recall_curves(saved.result["curves"]), "image/svg+xml", f"simulation-{saved.pk}.svg")
