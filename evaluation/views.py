"""Staff pages: upload a run, score it, see the tables and plots, download them, compare two reports."""

import json
import tempfile
from pathlib import Path

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpResponse
from django.shortcuts import get_object_or_404, redirect, render

from . import plots
from .forms import EvaluateForm
from .inputs import GroundTruth, InputError, qrels_from_database, read_qrels, read_queries, read_run
from .models import SavedReport, SavedRun, SavedSimulation
from .report import compare, evaluate


def _saved(upload, folder: Path, role: str) -> Path:
    """Save an uploaded file under its own name in a folder of its role (run, qrels, queries), so that
    two files uploaded with the same name never overwrite each other."""
    (folder / role).mkdir(exist_ok=True)
    path = folder / role / Path(upload.name).name
    with path.open("wb") as out:
        for chunk in upload.chunks():
            out.write(chunk)
    return path


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
def index(request):
    form = EvaluateForm(request.POST or None, request.FILES or None)
    if request.method == "POST" and form.is_valid():
        data = form.cleaned_data
        with tempfile.TemporaryDirectory() as scratch:
            folder = Path(scratch)
            try:
                queries_path = _saved(data["queries"], folder, "queries") if data["queries"] else None
                if data["qrels"]:
                    truth = read_qrels(_saved(data["qrels"], folder, "qrels"), queries_path)
                elif data["protocol"] == "rerank":
                    truth = GroundTruth(
                        {}, {}, read_queries(queries_path) if queries_path else {}, source="rerank candidates"
                    )
                else:
                    truth = qrels_from_database()
                    if queries_path:
                        truth.queries = read_queries(queries_path)
                run = read_run(_saved(data["run"], folder, "run"), queries=truth.queries)
                report = evaluate(
                    truth, run, protocol=data["protocol"], k=data["k"], normaliser=data["normaliser"] or None
                )
            except (InputError, ValueError) as error:
                message = str(error)
                for role in ("run", "qrels", "queries"):  # the file as the user named it, not our scratch path
                    message = message.replace(f"{folder}/{role}/", "")
                form.add_error(None, message)
            else:
                data["run"].seek(0)
                saved_run = SavedRun.objects.create(name=data["name"], file=data["run"], uploaded_by=request.user)
                group_by = [
                    c
                    for c in ("supercategory", "category", "iconic_group")
                    if any(c in q for q in truth.queries.values())
                ]
                saved = SavedReport.objects.create(
                    run=saved_run,
                    protocol=report.protocol,
                    k=report.k,
                    ground_truth=data["qrels"].name if data["qrels"] else truth.source,
                    result=report.as_json(group_by),
                )
                messages.success(request, f"Scored {saved_run.name}: {len(report.per_query)} queries.")
                return redirect("evaluation:report", report_id=saved.pk)
    return render(
        request,
        "evaluation/index.html",
        {
            "form": form,
            "reports": SavedReport.objects.select_related("run")[:50],
            "simulations": SavedSimulation.objects.all()[:50],
        },
    )


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
def report(request, report_id):
    saved = get_object_or_404(SavedReport.objects.select_related("run"), pk=report_id)
    result = saved.result
    other = (
        SavedReport.objects.filter(pk=request.GET.get("compare") or 0).first()
        if request.GET.get("compare", "").isdigit()
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
def download(request, report_id, kind):
    if kind not in ("json", "csv"):
        return HttpResponse("Reports download as json or csv.", status=404)
    saved = get_object_or_404(SavedReport, pk=report_id)
    if kind == "json":
        return _attachment(json.dumps(saved.result, indent=2), "application/json", f"report-{saved.pk}.json")
    return _attachment(_as_report(saved.result).per_query_csv(), "text/csv; charset=utf-8", f"report-{saved.pk}.csv")


def _attachment(body, content_type: str, filename: str) -> HttpResponse:
    response = HttpResponse(body, content_type=content_type)
    response["Content-Disposition"] = f'attachment; filename="{filename}"'
    return response


def _as_report(result):
    from .report import Report

    metrics = tuple(result["overall"])
    return Report(
        result["protocol"], result["k"], metrics, result["per_query"], result["warnings"], result.get("run", "")
    )


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
def simulation(request, simulation_id):
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
            "target_key": target,
            "plot": plots.recall_curves(result["curves"]),
        },
    )


@login_required
@permission_required("evaluation.evaluate_runs", raise_exception=True)
def simulation_download(request, simulation_id, kind):
    if kind not in ("json", "svg"):
        return HttpResponse("Simulations download as json or svg.", status=404)
    saved = get_object_or_404(SavedSimulation, pk=simulation_id)
    if kind == "json":
        return _attachment(json.dumps(saved.result, indent=1), "application/json", f"simulation-{saved.pk}.json")
    return _attachment(plots.recall_curves(saved.result["curves"]), "image/svg+xml", f"simulation-{saved.pk}.svg")
