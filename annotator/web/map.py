"""The staff's map of the whole collection (the labeling page's map of one query is drawn by the labeling page from
the API: annotator.api.views)."""

from django.contrib.auth.decorators import login_required, permission_required
from django.http import HttpResponse, HttpResponseBase
from django.shortcuts import render
from django.views.decorators.http import require_GET

from annotator.labels import visibility
from annotator.map import points
from common.http import SignedInRequest
from search.facade import SearchUnavailable


@login_required
@permission_required("annotator.view_label", raise_exception=True)
@require_GET
def collection_map(request: SignedInRequest) -> HttpResponseBase:
    """The map of the whole collection for staff: where the labeled and the relevant images of every query lie."""
    return render(request, "annotator/collection_map.html", {})


@login_required
@permission_required("annotator.view_label", raise_exception=True)
@require_GET
def collection_map_points(request: SignedInRequest) -> HttpResponseBase:
    """collection_map's points (annotator.map.points.collection_binary); 503 with a sentence before a map."""
    try:
        body = points.collection_binary(visibility.of(request))
    except SearchUnavailable as error:
        return HttpResponse(str(error), status=503, content_type="text/plain; charset=utf-8")
    response = HttpResponse(body, content_type="application/octet-stream")
    response["Cache-Control"] = "private, no-store"
    return response
