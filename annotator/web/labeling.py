"""The annotators' pages: labeling one query, its results, label saves and Submit.

Thin: the work is in labeling/grid.py, annotator.labels, catalog.taxa and the search engine.
Taxon suggestions and image files are the catalog's (catalog/views.py).
"""

from collections.abc import Iterable, Mapping
from dataclasses import replace
from typing import Any

from django.conf import settings
from django.contrib.auth.decorators import login_required
from django.db import transaction
from django.http import (
    FileResponse,
    Http404,
    HttpResponse,
    HttpResponseBadRequest,
    HttpResponseBase,
    HttpResponseForbidden,
    JsonResponse,
)
from django.shortcuts import get_object_or_404, redirect, render
from django.urls import reverse
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods, require_POST
from django_htmx.http import HttpResponseClientRedirect, HttpResponseClientRefresh

from annotator import labels
from annotator.completeness import claims
from annotator.labeling import examples, grid
from annotator.labels import selectors, visibility
from annotator.labels.changes import MAX_LABELS_PER_SAVE, BadChanges, read_changes, read_image_ids
from annotator.labels.sealed import seen_by
from annotator.map import points as map_view
from annotator.models import LabelSource, LabelValue, Query, QueryExample
from annotator.progress import figures
from annotator.web.labeling_forms import ExampleUploadForm, LabelingSearchForm, SearchState
from annotator.web.model_box import model_box
from annotator.web.tracking_form import TrackingForm
from common.api_params import BadJson, parse_json, strict_id
from common.database import retry_once_if_dropped
from common.formats import RASTER_TYPES
from common.http import SignedInRequest, json_login_required, sandboxed


def _ranking(request: SignedInRequest, query: Query) -> str:
    """The ranking the annotator chose for this query: from the address when given (and remembered in
    the session for the query), else the remembered one, else the text. A ranking by examples is not
    remembered, nor taken from memory, while the query has no example and the address names no image to
    rank like: it would show an empty grid on every visit."""
    key = f"quire:ranking:{query.pk}"
    chosen = request.GET.get("ranking", "")
    if chosen in grid.RANKINGS:
        if request.session.get(key) != chosen and _can_rank(request, query, chosen):
            request.session[key] = chosen
        return chosen
    remembered = request.session.get(key)
    return remembered if remembered in grid.RANKINGS and _can_rank(request, query, remembered) else "text"


def _can_rank(request: SignedInRequest, query: Query, ranking: str) -> bool:
    """Whether `ranking` has what it ranks from: a ranking by examples needs an example or a "like" image."""
    needs_examples = ranking in grid.EXAMPLE_RANKINGS
    return not needs_examples or bool(request.GET.getlist("like")) or query.examples.exists()


def _search_state(request: SignedInRequest, query: Query) -> SearchState:
    """The page's search as the annotator set it in the address (forms.LabelingSearchForm)."""
    ranking = _ranking(request, query)
    params = request.GET.copy()
    params.pop("offset", None)
    params["ranking"] = ranking
    form = LabelingSearchForm(request.GET, page_sizes=grid.PAGE_SIZES)
    state = form.state(query, ranking, params.urlencode())
    chosen = map_view.selection(state.within)
    return replace(state, within_ids=chosen.image_ids, within_error=chosen.error)


def _results(
    request: SignedInRequest,
    query: Query,
    state: SearchState,
    offset: int,
    shown_ids: Iterable[int] = (),
    limit: int | None = None,
    seen: Mapping[int, str] | None = None,
) -> grid.ResultsPage:
    """The page's tiles in the chosen ranking; `seen` (what the viewer sees of the query's labels) when the
    caller has read it already."""
    if state.ranking != "text":
        return grid.adaptive_results(
            query,
            viewer=request.user,
            strategy=state.ranking,
            text=state.q,
            taxon_ids=state.taxon_ids,
            example_ids=state.like,
            shown_ids=shown_ids,
            offset=offset,
            limit=limit or state.size,
            seen=seen,
            within=state.within_ids,
        )
    return grid.results(
        query,
        viewer=request.user,
        text=state.q,
        taxon_ids=state.taxon_ids,
        hide_labeled=state.hide_labeled,
        offset=offset,
        limit=state.size,
        seen=seen,
        within=state.within_ids,
    )


@login_required
@require_GET
@never_cache  # no-store: Back must ask again, not show the labels as they were before the last saves (issue 64)
def label_page(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    query = get_object_or_404(Query, pk=query_id)
    state = _search_state(request, query)
    # Before the results: an example that finishes embedding while they are ranked must still leave the page
    # polling, or a grid drawn as "still being embedded" would stay so.
    embedding = examples.ensure_embedding(query)
    # What the viewer sees of the query's labels, read once for the grid and for "labeled down to".
    seen = seen_by(query, request.user)
    page = _results(request, query, state, 0, seen=seen)
    sight = visibility.of(request)
    counts = sight.counts(query)
    return render(
        request,
        "annotator/label.html",
        {
            "query": query,
            "state": state,
            "page": page,
            "counts": counts,
            "page_sizes": grid.PAGE_SIZES,
            "labeled_down_to": grid.labeled_down_to(
                query, viewer=request.user, text=state.q, taxon_ids=state.taxon_ids, seen=seen
            ),
            **figures.side_pane(query, sight, counts),
            "examples": query.examples.all(),
            "examples_embedding": embedding,
            "rankings": grid.RANKINGS,
            "ranking_name": grid.RANKINGS.get(state.ranking, state.ranking),
            "rerank_every": settings.QUIRE_RERANK_EVERY,
            "stacks_off": grid.stacks_off() if state.ranking != "text" else "",
            "stack_ask_above": STACK_ASK_ABOVE,
            "submit_limit": MAX_IMAGES_PER_SUBMIT,
            "upload_form": ExampleUploadForm(),
            **model_box(query, sight),
            "cf": claims.form_choices(query, ", ".join(item.value for item in state.filters))
            if labels.may_manage(request.user)
            else None,
            "tracking": TrackingForm(instance=query, staff=labels.may_manage(request.user)),
            "locked": labels.locked_for(query, request.user),
            # The adjudicator's way in from the query's own page: its queue, with what waits there.
            "undecided": (
                selectors.undecided_by_query([query]).get(query.pk, 0)
                if request.user.has_perm(labels.ADJUDICATE)
                else None
            ),
            "map_hints": [
                (hint, _with_within(request, hint.within)) for hint in map_view.cluster_hints(query, request.user, seen)
            ],
        },
    )


def _with_within(request: SignedInRequest, within: str) -> str:
    """This page's address with the map's selection set to `within` (a hint's cluster)."""
    params = request.GET.copy()
    params["within"] = within
    params.pop("offset", None)
    return f"?{params.urlencode()}"


@never_cache  # the tiles' labels, as the page: never from a cache
@login_required
@require_http_methods(["GET", "POST"])
def results_fragment(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """More tiles for "load more" (htmx appends them to the grid). A ranking that learns is asked with
    POST: the body lists the images already on the page (`shown`), which it must not propose again,
    and may ask for `count` tiles (a re-rank of the tiles below the annotator's view)."""
    query = get_object_or_404(Query, pk=query_id)
    try:
        offset = max(0, int(request.GET.get("offset", request.POST.get("offset", 0))))
        count = int(request.POST.get("count", 0)) or None
    except ValueError:
        return HttpResponseBadRequest("offset and count must be whole numbers.")
    if count is not None and not 1 <= count <= max(grid.PAGE_SIZES):
        return HttpResponseBadRequest(f"count must be 1 to {max(grid.PAGE_SIZES)}.")
    given = request.POST.getlist("shown")
    shown = [image_id for value in given if (image_id := strict_id(value)) is not None]
    if len(shown) != len(given) or len(shown) > 10_000:
        return HttpResponseBadRequest("shown must list at most 10,000 image ids.")
    state = _search_state(request, query)
    page = _results(request, query, state, offset, shown_ids=shown, limit=count)
    return render(request, "annotator/_results.html", {"query": query, "state": state, "page": page})


@login_required
@require_POST
def save_tracking(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """The tracking sheet on the labeling page: status, fully labeled?, notes (and for staff, the lock)."""
    query = get_object_or_404(Query, pk=query_id)
    if labels.locked_for(query, request.user):
        return HttpResponseForbidden(labels.locked_message(query))
    form = TrackingForm(request.POST, instance=query, staff=labels.may_manage(request.user))
    saved = form.is_valid()
    if saved:
        form.save()
    return render(
        request,
        "annotator/_tracking.html",
        {"query": query, "tracking": form, "saved": saved, "locked": labels.locked_for(query, request.user)},
        status=200 if saved else 400,
    )


class BadSave(ValueError):
    """A save the page sent wrongly; the text says what is wrong."""


def _json_body(request: SignedInRequest) -> Any:  # a JSON object (dict) or the form (QueryDict)
    """The body as the page sends it: a JSON object, or a form. Raises BadSave for anything else."""
    if request.content_type != "application/json":
        return request.POST
    try:
        body = parse_json(request.body)
    except BadJson as error:
        raise BadSave(str(error)) from None
    if not isinstance(body, dict):
        raise BadSave("The body must be a JSON object.")
    return body


PAGE_SOURCES = (LabelSource.CLICK, LabelSource.KEYBOARD)
# One Submit is one transaction: 10,500 images held one for 5.2 s (issue 37). Four of the largest pages; the
# page submits the first this many of what it shows and says to press again for the rest.
MAX_IMAGES_PER_SUBMIT = 4 * max(grid.PAGE_SIZES)
# A label key on a stack of more look-alikes than this asks for the key again first (static/js/labeling/main.js):
# one key must not label a crowd by surprise.
STACK_ASK_ABOVE = 20


@json_login_required
@require_POST
@retry_once_if_dropped
def save_label(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """Set (or with value "" clear) labels: one, {"image", "value", "source", "lead_time_ms"}, or several,
    {"labels": [{"image", "value", "source", "lead_time_ms"}...], "source"} (a label's own source, else
    the batch's), all in one transaction.
    Idempotent: the page retries it freely."""
    query = get_object_or_404(Query, pk=query_id)
    try:
        body = _json_body(request)
        source = body.get("source", LabelSource.CLICK)
        if source not in PAGE_SOURCES:
            raise BadSave("source must be click or keyboard.")
        changes = read_changes(
            body.get("labels", [body]), limit=MAX_LABELS_PER_SAVE, sources=PAGE_SOURCES, source=source
        )
    except BadChanges as bad:
        return JsonResponse({"error": str(bad)}, status=404 if bad.unknown else 400)
    except BadSave as error:
        return JsonResponse({"error": str(error)}, status=400)
    try:
        # The write and the counts it answers with in one transaction: a database lost while reading the counts
        # takes the write back too, so the 503 that follows truly means nothing was saved (and the retry saves).
        with transaction.atomic():
            results = labels.set_labels(query_id=query.pk, changes=changes, user=request.user, source=source)
            counts = visibility.Sight(request.user).counts(query)  # after the write: their judgment unblinds
    except labels.LabelRefused as refused:
        return JsonResponse({"error": str(refused)}, status=403)
    saved = [{"image": r.image_id, "label": r.value, "changed": r.changed} for r in results]
    return JsonResponse({**saved[0], "saved": saved, "counts": counts})


@json_login_required
@require_POST
@retry_once_if_dropped
def submit(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """Every image shown and not yet labeled becomes not relevant, in one transaction. Images are
    checked to be in the collection (not to be the ones shown: the page sends what it showed)."""
    query = get_object_or_404(Query, pk=query_id)
    try:
        body = _json_body(request)
        if "images" not in body:
            raise BadSave("images is missing: send the ids of the images shown, as a JSON list or form fields.")
        raw = body.getlist("images") if hasattr(body, "getlist") else body["images"]  # a form, or JSON
        image_ids = read_image_ids(raw, limit=MAX_IMAGES_PER_SUBMIT)
    except (BadSave, BadChanges) as error:
        return JsonResponse({"error": str(error)}, status=400)
    try:
        with transaction.atomic():  # the write and its counts together, as in save_label
            written = labels.label_unlabeled(
                query.pk, image_ids, value=LabelValue.NOT_RELEVANT, user=request.user, source=LabelSource.SUBMIT
            )
            counts = visibility.Sight(request.user).counts(query)
    except labels.LabelRefused as refused:
        return JsonResponse({"error": str(refused)}, status=403)
    return JsonResponse({"written": len(written), "labeled": written, "counts": counts})


@login_required
@require_POST
def upload_example(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """Keep an uploaded example image with the query and rank by the text and the examples together. Its
    vector is computed in the background (annotator.labeling.examples): the page says "embedding…" until it is
    ready. Staff and annotators alike: an example is a search aid, not a label."""
    query = get_object_or_404(Query, pk=query_id)
    if labels.locked_for(query, request.user):
        return HttpResponseForbidden(labels.locked_message(query))
    form = ExampleUploadForm(request.POST, request.FILES)
    if not form.is_valid():
        return HttpResponseBadRequest(" ".join(str(message) for errors in form.errors.values() for message in errors))
    upload = form.cleaned_data["image"]
    with transaction.atomic():
        # Uploads of one query in turn: the second half of a double click finds the first's example and adds none.
        Query.objects.select_for_update().filter(pk=query.pk).exists()
        if examples.uploaded_already(query, upload) is None:
            example = QueryExample.objects.create(
                query=query, upload=upload, relevant=True, note=form.cleaned_data["note"]
            )
            transaction.on_commit(lambda: examples.send(example.pk))
    # The side pane's form ranks by the text and the examples; an image dropped on the search box, by the image.
    ranking = "image" if request.POST.get("ranking") == "image" else "fusion"
    ranked = f"{reverse('label', args=[query.pk])}?ranking={ranking}"
    # Sent by htmx from the page, so that a refusal (not an image, too large) is said beside the form
    # (common/refusals.py) instead of replacing the page; the form still works without scripts.
    return HttpResponseClientRedirect(ranked) if request.htmx else redirect(ranked)


@login_required
@require_GET
def examples_embedding(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """Polled by the labeling page while an uploaded example is being embedded: 204 while any still is (and
    sends it again if its job was lost), then htmx's refresh, so that the page ranks with it."""
    query = get_object_or_404(Query, pk=query_id)
    embedding = examples.ensure_embedding(query)
    if embedding.refused:  # said in the polling line, which keeps polling: the queue may come back
        return HttpResponse(embedding.refused)
    if embedding.waiting:
        return HttpResponse(status=204)
    return HttpResponseClientRefresh()


@login_required
@require_GET
def example_file(request: SignedInRequest, query_id: int, example_id: int) -> HttpResponseBase:
    """An uploaded example's image (uploads are not served as static media: they stay behind the login)."""
    example = get_object_or_404(QueryExample, pk=example_id, query_id=query_id)
    if not example.upload:
        raise Http404("This example is an image of the collection.")
    kind = (example.upload.name or "").rsplit(".", 1)[-1].upper()
    content_type = RASTER_TYPES.get("JPEG" if kind == "JPG" else kind, "application/octet-stream")
    try:
        stored = example.upload.open("rb")
    except OSError:  # lost from the disk (a disk fault, a restore without the media folder): not a server error
        raise Http404("This example's stored file is gone: upload it again.") from None
    return sandboxed(FileResponse(stored, content_type=content_type))
