"""How far the queries are: the dashboard, one query's page, and the labeling page's side-pane figures.
Every figure that reads every label comes cached or "computing…" from the background (annotator.progress)."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.http import urlencode
from django.views.decorators.http import require_GET

from annotator.forms import TrackingForm
from annotator.inquire.exporters import EXPORTS
from annotator.labels import visibility
from annotator.models import Query
from annotator.progress import figures
from annotator.team.panel import team_panel
from common.http import SignedInRequest


@login_required
@permission_required("annotator.view_label", raise_exception=True)
def dashboard(request: SignedInRequest) -> HttpResponseBase:
    queries, totals = figures.dashboard(
        sight=visibility.of(request),
        sort=request.GET.get("sort", "id"),
        status=request.GET.get("status", ""),
        split=request.GET.get("split", ""),
    )
    return render(
        request,
        "annotator/dashboard.html",
        {
            "queries": queries,
            "totals": totals,
            "run_goal": figures.RUN_GOAL,
            "statuses": Query.Status.choices,
            "splits": Query.Split.choices,
            "fully_choices": Query.FullyLabeled.choices,
            "params": request.GET,
            # The filters a column's sort link keeps (sorting once dropped them).
            "filters": urlencode({name: request.GET[name] for name in ("status", "split") if request.GET.get(name)}),
        },
    )


@login_required
@permission_required("annotator.view_label", raise_exception=True)
def dashboard_query(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """One query: its tracking fields (editable with the permission to change queries), charts of its
    labeling, and its exports."""
    query = get_object_or_404(Query, pk=query_id)
    can_change = request.user.has_perm("annotator.change_query")
    form = TrackingForm(request.POST or None, instance=query, staff=can_change)
    if request.method == "POST" and not can_change:
        raise PermissionDenied("Changing a query's tracking fields needs the permission to change queries.")
    if request.method == "POST" and form.is_valid():
        form.save()
        messages.success(request, f"Saved the tracking fields of query {query.pk}.")
        return redirect("dashboard-query", query_id=query.pk)
    sight = visibility.of(request)
    counts = sight.counts(query)
    # Every figure below is read off every judgment or label, the hidden ones too: withheld from a viewer who
    # still judges images of this query blind (the counts above are theirs).
    withheld = sight.withheld(query.pk)
    run = None if withheld else figures.figures_or_computing(query, counts["labeled"], counts["last_activity"])[0]
    return render(
        request,
        "annotator/dashboard_query.html",
        {
            "query": query,
            "form": form,
            "counts": counts,
            "withheld": withheld,
            "run": run,
            "run_goal": figures.RUN_GOAL,
            "activity": None if withheld else figures.activity(query),
            "team": None if withheld else team_panel(query),
            "exports": list(EXPORTS),
        },
    )


@login_required
@require_GET
def figures_fragment(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """The side pane's figures (the not-relevant run, the recall estimate), asked for again by the page a
    moment after its labels are saved, so that they follow the labels instead of the page's load."""
    query = get_object_or_404(Query, pk=query_id)
    sight = visibility.of(request)
    return render(request, "annotator/_figures.html", figures.side_pane(query, sight, sight.counts(query)))


@login_required
@require_GET
def estimate_fragment(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """The recall estimate of a query, polled by the labeling page's side pane while the background computes
    it. (The dashboard does not poll: a project's hundreds of rows would poll at once; like its run and TSR
    cells, the row says "computing…" until a reload finds the figure.)"""
    query = get_object_or_404(Query, pk=query_id)
    sight = visibility.of(request)
    return render(request, "annotator/_estimate.html", figures.side_pane(query, sight, sight.counts(query)))
