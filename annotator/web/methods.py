"""The side pane's model box: start a model job (a rerank, VisRet, a judge panel), follow it, and see its
drawings. The jobs run in the background (annotator.methods.rerank)."""

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, HttpResponse, HttpResponseBadRequest, HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET, require_POST

from annotator import labels
from annotator.labels import visibility
from annotator.methods import rerank
from annotator.methods.registry import MODEL_METHODS
from annotator.models import GeneratedImage, Query
from annotator.web.model_box import model_box
from common.background import QueueUnavailable
from common.http import SignedInRequest, sandboxed
from common.refusals import drawn_for_target
from lmm.facade import ModelUnavailable


@login_required
@require_POST
def start_rerank(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """Queue a rerank of the query's CLIP top 100 by the configured vision-language model."""
    query = get_object_or_404(Query, pk=query_id)
    method = request.POST.get("method", "yesno")
    if method not in MODEL_METHODS:
        return HttpResponseBadRequest(f"method is one of {', '.join(MODEL_METHODS)}.")
    if labels.locked_for(query, request.user):
        return _rerank_refused(request, query, labels.locked_message(query), 403)
    try:
        rerank.start_job(query, user=request.user, method=method)
    except ModelUnavailable as error:
        return _rerank_refused(request, query, str(error), 409)
    except QueueUnavailable as error:  # the job row ends failed with the same sentence
        return _rerank_refused(request, query, str(error), 503)
    return render(
        request,
        "annotator/_rerank.html",
        {**model_box(query, visibility.of(request)), "locked": labels.locked_for(query, request.user)},
    )


def _rerank_refused(request: SignedInRequest, query: Query, sentence: str, status: int) -> HttpResponse:
    """The side pane's model box with the refusal's sentence in it, where the annotator pressed the button."""
    box = {
        **model_box(query, visibility.of(request)),
        "error": sentence,
        "locked": labels.locked_for(query, request.user),
    }
    return drawn_for_target(render(request, "annotator/_rerank.html", box, status=status))


@login_required
@require_GET
def rerank_status(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """The side pane's rerank box (htmx polls it while the job runs)."""
    query = get_object_or_404(Query, pk=query_id)
    return render(
        request,
        "annotator/_rerank.html",
        {**model_box(query, visibility.of(request)), "locked": labels.locked_for(query, request.user)},
    )


@login_required
@require_GET
def drawing_file(request: SignedInRequest, query_id: int, drawing_id: int) -> HttpResponseBase:
    """A VisRet drawing (behind the login, like uploaded examples)."""
    drawing = get_object_or_404(GeneratedImage, pk=drawing_id, query_id=query_id)
    return sandboxed(FileResponse(drawing.file.open("rb"), content_type="image/png"))
