"""The annotators' pages: labeling one query, its results, label saves and Submit.

Thin: the work is in labeling.py, labels.py, selectors.py, catalog.taxa and the search engine.
Taxon suggestions and image files are the catalog's (catalog/views.py).
"""

import json

from django.contrib.auth.decorators import login_required
from django.http import HttpResponseBadRequest, JsonResponse
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from catalog import taxa
from catalog.models import Image

from . import labeling, labels, selectors
from .models import LabelSource, LabelValue, Query


def _search_state(request, query: Query) -> dict:
    """The page's search as the annotator set it: text, filters, hide-labeled, page size."""
    text = request.GET.get("q", query.text).strip() or query.text
    filters = [value.strip() for value in request.GET.getlist("taxon") if value.strip()]
    try:
        size = int(request.GET.get("size", labeling.PAGE_SIZES[0]))
    except ValueError:
        size = labeling.PAGE_SIZES[0]
    params = request.GET.copy()
    params.pop("offset", None)
    return {
        "querystring": params.urlencode(),
        "q": text,
        "filters": [{"value": value, "label": taxa.describe(value)} for value in dict.fromkeys(filters)],
        "hide_labeled": request.GET.get("hide") == "1",
        "size": size if size in labeling.PAGE_SIZES else labeling.PAGE_SIZES[0],
    }


def _results(query: Query, state: dict, offset: int) -> labeling.ResultsPage:
    taxon_ids = None
    if state["filters"]:
        try:
            taxon_ids = taxa.species_for_all(item["value"] for item in state["filters"])
        except taxa.UnknownTaxon as error:
            return labeling.ResultsPage([], offset, state["size"], str(error))
    return labeling.results(
        query,
        text=state["q"],
        taxon_ids=taxon_ids,
        hide_labeled=state["hide_labeled"],
        offset=offset,
        limit=state["size"],
    )


@login_required
@require_GET
def label_page(request, query_id):
    query = get_object_or_404(Query, pk=query_id)
    state = _search_state(request, query)
    page = _results(query, state, 0)
    return render(
        request,
        "annotator/label.html",
        {
            "query": query,
            "state": state,
            "page": page,
            "counts": selectors.label_counts(query),
            "page_sizes": labeling.PAGE_SIZES,
        },
    )


@login_required
@require_GET
def results_fragment(request, query_id):
    """More tiles for "load more" (htmx appends them to the grid)."""
    query = get_object_or_404(Query, pk=query_id)
    try:
        offset = max(0, int(request.GET.get("offset", 0)))
    except ValueError:
        return HttpResponseBadRequest("offset must be a whole number.")
    state = _search_state(request, query)
    return render(
        request, "annotator/_results.html", {"query": query, "state": state, "page": _results(query, state, offset)}
    )


def _json_body(request) -> dict:
    if request.content_type == "application/json":
        try:
            body = json.loads(request.body or b"{}")
        except ValueError:
            return {}
        return body if isinstance(body, dict) else {}
    return request.POST


@login_required
@require_POST
def save_label(request, query_id):
    """Set (or with value "" clear) one image's label. Idempotent: the page retries it freely."""
    query = get_object_or_404(Query, pk=query_id)
    body = _json_body(request)
    value = body.get("value", None)
    source = body.get("source", LabelSource.CLICK)
    try:
        image_id = int(body.get("image"))
    except (TypeError, ValueError):
        return JsonResponse({"error": "image must be an image id (a whole number)."}, status=400)
    if value not in (*LabelValue.values, "") or source not in (LabelSource.CLICK, LabelSource.KEYBOARD):
        return JsonResponse(
            {"error": f"value must be one of {', '.join(LabelValue.values)} or empty; source click or keyboard."},
            status=400,
        )
    lead_time_ms = body.get("lead_time_ms")
    if lead_time_ms is not None and (
        isinstance(lead_time_ms, bool) or not isinstance(lead_time_ms, int) or not 0 <= lead_time_ms < 2**31
    ):
        return JsonResponse({"error": "lead_time_ms must be a whole number of milliseconds."}, status=400)
    if not Image.objects.filter(pk=image_id).exists():
        return JsonResponse({"error": f"No image {image_id}."}, status=404)
    if value:
        labels.set_label(
            query_id=query.pk,
            image_id=image_id,
            value=value,
            user=request.user,
            source=source,
            lead_time_ms=lead_time_ms,
        )
    else:
        labels.clear_label(query_id=query.pk, image_id=image_id, user=request.user, source=source)
    return JsonResponse({"image": image_id, "label": value, "counts": selectors.label_counts(query)})


@login_required
@require_POST
def submit(request, query_id):
    """Every image shown and not yet labeled becomes not relevant, in one transaction."""
    query = get_object_or_404(Query, pk=query_id)
    body = _json_body(request)
    raw = body.getlist("images") if hasattr(body, "getlist") else body.get("images", [])  # a form, or JSON
    try:
        if not isinstance(raw, list):
            raise TypeError
        image_ids = [int(value) for value in raw]
    except (TypeError, ValueError):
        return JsonResponse({"error": "images must be a list of image ids."}, status=400)
    known = set(Image.objects.filter(pk__in=image_ids).values_list("id", flat=True))
    if unknown := [image_id for image_id in image_ids if image_id not in known]:
        return JsonResponse({"error": f"Unknown image ids: {unknown[:5]}."}, status=400)
    written = labels.label_unlabeled(
        query.pk, image_ids, value=LabelValue.NOT_RELEVANT, user=request.user, source=LabelSource.SUBMIT
    )
    return JsonResponse({"written": written, "counts": selectors.label_counts(query)})
