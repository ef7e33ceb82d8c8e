from django.contrib.admin.views.decorators import staff_member_required
from django.contrib.auth.decorators import login_required
from django.db.models import Count, Max, Q
from django.http import Http404, HttpResponseBadRequest, StreamingHttpResponse
from django.shortcuts import render

from .exporters import EXPORTS, csv_lines
from .models import LabelValue, Query


@login_required
def home(request):
    queries = Query.objects.annotate(
        labeled=Count("labels"),
        relevant=Count("labels", filter=Q(labels__value=LabelValue.RELEVANT)),
        last_activity=Max("labels__updated_at"),
    )
    return render(request, "annotator/home.html", {"queries": queries, "exports": list(EXPORTS)})


@staff_member_required
def download_export(request, name):
    """Stream one INQUIRE CSV (optionally for ?query=ID&query=ID only); never built whole in memory."""
    if name not in EXPORTS:
        raise Http404(f"No export named {name}; the exports are {', '.join(EXPORTS)}.")
    query_ids = None
    if raw := request.GET.getlist("query"):
        try:
            query_ids = [int(value) for value in raw]
        except ValueError:
            return HttpResponseBadRequest("query must be a query id (a whole number).")
    response = StreamingHttpResponse(csv_lines(EXPORTS[name](query_ids)), content_type="text/csv; charset=utf-8")
    response["Content-Disposition"] = f'attachment; filename="{name}"'
    return response
