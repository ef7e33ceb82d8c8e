"""How far the queries are: the dashboard, one query's page, and the labeling page's side-pane figures.
Every figure that reads every label comes cached or "computing…" from the background (annotator.progress)."""

from typing import Any

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.http import require_GET, require_POST
from django_htmx.http import HttpResponseClientRedirect

from annotator import labels
from annotator.api import benchmark as benchmark_api
from annotator.completeness import benchmark, check_requests, checks, claims
from annotator.completeness.frames import BadCheck, NothingToCheckYet
from annotator.inquire.exporters import EXPORTS
from annotator.labels import visibility
from annotator.models import Query
from annotator.progress import figures
from annotator.team import costs
from annotator.team.panel import team_panel
from annotator.web.tracking_form import TrackingForm
from common.http import SignedInRequest
from common.refusals import drawn_for_target


def _cost_line(query: Query) -> dict[str, Any]:
    """The query's cost in a sentence (annotator.team.costs), or computing while the background works it out."""
    found = costs.cached_report(query.pk)
    if failed := costs.failure(found):
        return {"computing": False, "line": failed}
    rows = found["queries"] if found else []
    return {"computing": found is None, "line": costs.cost_line(rows[0]) if rows else ""}


_MARK = 2**31 - 1  # an id no row has: reversed once, then replaced by each row's


@login_required
@permission_required("annotator.view_label", raise_exception=True)
def dashboard(request: SignedInRequest) -> HttpResponseBase:
    return render(request, "annotator/dashboard.html", _dashboard_context(request, request.GET))


def _dashboard_context(request: SignedInRequest, params: Any, benchmark_error: str = "") -> dict[str, Any]:
    """The dashboard as `params` (the address's sort and filters) asks: every page that shows it builds it here,
    the benchmark panel with `benchmark_error` in it where a draw was refused."""
    queries, totals = figures.dashboard(
        sight=visibility.of(request),
        sort=params.get("sort", "id"),
        status=params.get("status", ""),
        split=params.get("split", ""),
    )
    # Each row's link from one reversed URL: reversing it for each row was 5% of the page at 250 rows (cProfile).
    page, mark = reverse("dashboard-query", args=[_MARK]), str(_MARK)
    for query in queries:
        query.page_url = page.replace(mark, str(query.pk))
    return {
        "queries": queries,
        "totals": totals,
        "run_goal": figures.RUN_GOAL,
        "statuses": Query.Status.choices,
        "splits": Query.Split.choices,
        "fully_choices": Query.FullyLabeled.choices,
        "params": params,
        # The filters a column's sort link keeps (sorting once dropped them).
        "filters": urlencode({name: params[name] for name in ("status", "split") if params.get(name)}),
        **_benchmark_panel(request, benchmark_error),
    }


def _benchmark_panel(request: SignedInRequest, error: str = "") -> dict[str, object]:
    """The dashboard's panel for the benchmark claim: the latest check as its report says it (figures withheld
    from a viewer who judges some of its pairs blind), and the form staff draw one with."""
    check = checks.latest()
    shown = None
    if check is not None:
        sight = visibility.of(request)
        withheld = next((w for q in check.strata.values_list("query_id", flat=True) if (w := sight.withheld(q))), "")
        shown = benchmark.report(check, withheld=withheld)
    return {"benchmark": shown, "benchmark_error": error, "may_draw": labels.may_manage(request.user)}


@login_required
@permission_required("annotator.view_label", raise_exception=True)
@require_POST
def draw_benchmark(request: SignedInRequest) -> HttpResponseBase:
    """Draw the benchmark check the dashboard's form describes (staff); a refusal is shown in the panel, where the
    button was pressed, with the dashboard as it was."""
    if not labels.may_manage(request.user):
        return _benchmark_refused(request, benchmark_api.DRAW_REFUSED, 403)
    form = request.POST
    data: dict[str, object] = {}
    for name in ("target_recall", "confidence"):
        try:
            data[name] = float(form.get(name, ""))
        except ValueError:
            return _benchmark_refused(request, f'"{name}" must be a number such as 0.9.', 400)
    if form.get("split"):
        data["split"] = form["split"]
    try:
        asked = check_requests.read_request(data, check_requests.BENCHMARK)
        if refused := visibility.of(request).refused_check([query.pk for query in checks.chosen(asked)]):
            return _benchmark_refused(request, refused, 403)
        check, drawn = checks.draw(None, asked, request.user)
    except BadCheck as bad:
        return _benchmark_refused(request, str(bad), 400)
    if not drawn:  # said in the panel, where the button was pressed, with what was asked and what is open
        return _benchmark_refused(request, benchmark.open_words(check, asked), 409)
    return redirect(reverse("dashboard") + "#benchmark")


def _benchmark_refused(request: SignedInRequest, sentence: str, status: int) -> HttpResponse:
    return render(request, "annotator/dashboard.html", _dashboard_context(request, {}, sentence), status=status)


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
    run = None if withheld else figures.figures_or_computing(query, counts["labeled"], counts["last_activity"])
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
            "completeness": claims.report(query, withheld=withheld),
            "activity": None if withheld else figures.activity(query),
            "team": None if withheld else team_panel(query),
            "cost": None if withheld else _cost_line(query),
            "exports": list(EXPORTS),
        },
    )


@login_required
@require_GET
def figures_fragment(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """The side pane's figures (the not-relevant run, the completeness claim), asked for again by the page a
    moment after its labels are saved, so that they follow the labels instead of the page's load."""
    query = get_object_or_404(Query, pk=query_id)
    sight = visibility.of(request)
    return render(request, "annotator/_figures.html", figures.side_pane(query, sight, sight.counts(query)))


@login_required
@require_GET
def check_cost(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """What the check the side pane's form describes would cost, before anything is drawn (staff)."""
    query = get_object_or_404(Query, pk=query_id)
    if not labels.may_manage(request.user):
        raise PermissionDenied("Drawing a completeness check needs the permission to change queries.")
    if refused := visibility.of(request).refused_check([query.pk]):  # its cost is read off every judgment
        return drawn_for_target(
            render(request, "annotator/_check_cost.html", {"query": query, "error": refused}, status=403)
        )
    try:
        asked = check_requests.read_form(request.GET)
        cost = checks.situation(query, asked)
    except NothingToCheckYet as not_yet:  # a state the pane describes (200), not a refused request
        return render(request, "annotator/_check_cost.html", {"query": query, "not_yet": str(not_yet)})
    except BadCheck as bad:
        return drawn_for_target(
            render(request, "annotator/_check_cost.html", {"query": query, "error": str(bad)}, status=400)
        )
    shown = {"query": query, "cost": cost, "two_looks": asked.second_judgments}
    return render(request, "annotator/_check_cost.html", shown)


@login_required
@require_POST
def draw_check(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """Draw the check the side pane's form describes (staff), then open its sample in the grid; a refusal is shown
    in the form, where the button was pressed."""
    query = get_object_or_404(Query, pk=query_id)
    if not labels.may_manage(request.user):
        return _check_refused(request, query, DRAW_REFUSED, 403)
    if refused := visibility.of(request).refused_check([query.pk]):
        return _check_refused(request, query, refused, 403)
    try:
        checks.draw(query, check_requests.read_form(request.POST), request.user)
    except BadCheck as bad:
        return _check_refused(request, query, str(bad), 400)
    return HttpResponseClientRedirect(reverse("label", args=[query.pk]) + "?ranking=check")


def _check_refused(request: SignedInRequest, query: Query, sentence: str, status: int) -> HttpResponse:
    shown = {"query": query, "cf": claims.form_choices(query, ""), "error": sentence}
    return drawn_for_target(render(request, "annotator/_check_form.html", shown, status=status))


DRAW_REFUSED = "Drawing a completeness check needs the permission to change queries: ask staff."
