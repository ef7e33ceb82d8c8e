from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.core.exceptions import PermissionDenied
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import Http404, HttpResponseBadRequest, JsonResponse, StreamingHttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.utils.http import urlencode

from . import progress, selectors, visibility
from .exporters import AGREEMENT_FILE, EXPORTS, export_lines
from .forms import QueryForm, TrackingForm
from .models import Query, duplicate_text_message, text_key
from .tokens import current_token, new_token, revoke_token


@login_required
def home(request):
    """The query list: progress, search, sort, and a form to add a query."""
    form = QueryForm(request.POST or None)
    if request.method == "POST" and form.is_valid():
        try:
            with transaction.atomic():
                query = form.save()
        except IntegrityError:  # the same text saved meanwhile: a double click's other half, or a colleague
            other = Query.objects.filter(text_key=text_key(form.cleaned_data["text"])).first()
            refused = duplicate_text_message(other) if other else "This query could not be saved: try again."
            form.add_error("text", refused)
        else:
            return redirect("label", query_id=query.pk)
    queries = selectors.with_label_counts(Query.objects.all())
    if search := request.GET.get("search", "").strip():
        queries = queries.filter(
            Q(text__icontains=search) | Q(category__icontains=search) | Q(supercategory__icontains=search)
        )
    sort = request.GET.get("sort", "id")
    sight = visibility.of(request)
    queries = progress.with_completeness(sight.count_queries(list(selectors.sorted_by(queries, sort))))
    if any(query.withheld for query in queries):  # the stored order reads the hidden labels: sort what they see
        queries = selectors.sorted_list(queries, sort)
    return render(
        request,
        "annotator/home.html",
        {
            "queries": queries,
            "exports": list(EXPORTS),
            "form": form,
            "search": search,
            "sort": sort,
            "run_goal": progress.RUN_GOAL,
        },
    )


@login_required
@permission_required("annotator.view_label", raise_exception=True)
def dashboard(request):
    queries, totals = progress.dashboard(
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
            "run_goal": progress.RUN_GOAL,
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
def dashboard_query(request, query_id):
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
    run = None if withheld else progress.figures_or_computing(query, counts["labeled"], counts["last_activity"])[0]
    return render(
        request,
        "annotator/dashboard_query.html",
        {
            "query": query,
            "form": form,
            "counts": counts,
            "withheld": withheld,
            "run": run,
            "run_goal": progress.RUN_GOAL,
            "activity": None if withheld else progress.activity(query),
            "team": None if withheld else _team(query),
            "exports": list(EXPORTS),
        },
    )


def _team(query: Query) -> dict:
    """The query's team panel: who is assigned, its overlap sample, agreement, disagreements, the judge panel."""
    from . import agreement  # scikit-learn and krippendorff load only for this page

    rows = query.judgments.filter(annotator__isnull=False).values_list("image_id", "annotator__username", "value")
    votes = agreement.votes_of(rows)  # an import's labels are nobody's vote
    return {
        "assigned": selectors.assignments_by_query([query]).get(query.pk, []),
        "overlap": query.overlap.count(),
        "figures": agreement.reliability(votes),  # the intervals `manage.py agreement` gives for these items
        "pairs": agreement.pairs(votes),
        "pending": len(selectors.disagreements(query, pending_only=True)),
        "judge_panel": agreement.judge_panel(query),
    }


@login_required
@permission_required("annotator.export_labels", raise_exception=True)
def download_export(request, name):
    """Stream one INQUIRE CSV, or agreement.json (optionally for ?query=ID&query=ID only); a CSV is never built
    whole in memory. Refused, with the reason, to a viewer for whom an overlap sample still waits (visibility)."""
    if name not in EXPORTS and name != AGREEMENT_FILE:
        raise Http404(f"No export named {name}; the exports are {', '.join([*EXPORTS, AGREEMENT_FILE])}.")
    query_ids = None
    if raw := request.GET.getlist("query"):
        if not all(value.isascii() and value.isdigit() and int(value) < 2**63 for value in raw):
            return HttpResponseBadRequest("query must be a query id (a whole number).")
        query_ids = sorted({int(value) for value in raw})
    if refused := visibility.of(request).refusal(query_ids):
        raise PermissionDenied(refused)  # Quire's 403 page says it, with the way back
    if name == AGREEMENT_FILE:  # what export_inquire writes beside the CSVs, at full precision
        from . import agreement  # scikit-learn and krippendorff load only for this file

        response = JsonResponse(agreement.report(query_ids), json_dumps_params={"indent": 2})
        response["Content-Disposition"] = f'attachment; filename="{export_file_name(name, query_ids)}"'
        return response
    for_spreadsheets = request.GET.get("spreadsheet_safe") in ("1", "on")
    response = StreamingHttpResponse(
        export_lines(name, query_ids, for_spreadsheets=for_spreadsheets), content_type="text/csv; charset=utf-8"
    )
    file_name = export_file_name(name, query_ids)
    if for_spreadsheets:
        file_name = file_name.replace(".csv", "_spreadsheet.csv")
    response["Content-Disposition"] = f'attachment; filename="{file_name}"'
    return response


def export_file_name(name: str, query_ids) -> str:
    """inquire_labels.csv for every query; inquire_labels_q7.csv (or _q7_q12) for some, so that
    downloads of different queries never overwrite each other."""
    if not query_ids:
        return name
    stem, suffix = name.rsplit(".", 1)
    ids = "_".join(f"q{query_id}" for query_id in query_ids[:5]) + ("_more" if len(query_ids) > 5 else "")
    return f"{stem}_{ids}.{suffix}"


@login_required
def api_token(request):
    """A user's own API key for scripts: see it, make a new one, or revoke it."""
    if request.method == "POST":
        if request.POST.get("action") == "revoke":
            revoke_token(request.user)
            messages.success(request, "Your API key was revoked: scripts using it are refused from now on.")
        else:
            new_token(request.user)
            messages.success(request, "A new API key was made; the old one, if any, no longer works.")
        return redirect("api-token")
    return render(request, "registration/api_token.html", {"key": current_token(request.user)})


@login_required
@permission_required("annotator.export_labels", raise_exception=True)
def download_export_choice(request):
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
