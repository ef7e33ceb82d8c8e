"""The collection's pages: taxon suggestions for filter boxes, and image files by id."""

from django.contrib.auth.decorators import login_required
from django.http import FileResponse, Http404, HttpResponseBase
from django.shortcuts import get_object_or_404, render
from django.views.decorators.http import require_GET

from common.http import SignedInRequest

from . import taxa
from .models import Image
from .thumbnails import NotServable, original_file, thumbnail_path


@login_required
@require_GET
def suggest_taxa(request: SignedInRequest) -> HttpResponseBase:
    return render(request, "catalog/_suggestions.html", {"suggestions": taxa.suggest(request.GET.get("taxon", ""))})


@login_required
@require_GET
def image_file(request: SignedInRequest, image_id: int, size: str) -> HttpResponseBase:
    if size not in ("thumb", "file"):
        raise Http404("Image sizes are thumb and file.")
    image = get_object_or_404(Image.objects.select_related("root"), pk=image_id)
    try:
        path, content_type = (thumbnail_path(image), "image/jpeg") if size == "thumb" else original_file(image)
    except NotServable as error:
        raise Http404(str(error)) from None
    response = FileResponse(path.open("rb"), content_type=content_type)
    response["Cache-Control"] = "private, max-age=86400"  # an image's file does not change under its id
    # Even a file that passed the checks is never run as a page: no script, no sniffing another type.
    response["Content-Security-Policy"] = "sandbox; default-src 'none'; img-src 'self'"
    response["X-Content-Type-Options"] = "nosniff"
    return response
