"""The team's pages: the adjudication queue of a query, and the project's agreement figures.

Thin: the work is in labels.adjudicate, selectors.disagreements and annotator.team.agreement.
"""

from typing import Any
from urllib.parse import urlencode

from django.contrib import messages
from django.contrib.auth.decorators import login_required, permission_required
from django.contrib.auth.views import redirect_to_login
from django.http import HttpResponseBase
from django.shortcuts import get_object_or_404, redirect, render
from django.utils.safestring import mark_safe
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET, require_http_methods

from annotator import labels
from annotator.labels import selectors, visibility
from annotator.models import UNDECIDED, Decision, LabelValue, Query
from annotator.team import agreement, costs
from annotator.web import team_plot as plot
from catalog.models import Image
from common.api_params import strict_id
from common.http import SignedInRequest

QUEUE_PAGE = 20  # disagreements shown at once: each image is shown large
# Values as the adjudicator reads them ("not relevant", not "not_relevant"); the page keeps the value as a CSS class.
VALUE_WORDS = {**{value: label.lower() for value, label in LabelValue.choices}, UNDECIDED: "undecided", "": "none"}


@require_http_methods(["GET", "POST"])
@never_cache  # Back shows the queue as it is now, not before the last decisions
def adjudicate(request: SignedInRequest, query_id: int) -> HttpResponseBase:
    """The query's disagreements not adjudicated yet, each image large with every annotator's judgment; the
    decision (a button, or the keys 1, 0 and u) becomes the final label. Refusals are shown at the top of the
    queue, with a 4xx status, and change nothing. A decision sent after the session ended is kept, as the labeling
    page keeps its labels: the way back from the login page carries it (`?unsaved=IMAGE:VALUE`), and the page
    sends it again once it is loaded (a POST: the GET itself changes nothing), saying so."""
    if not request.user.is_authenticated:
        return redirect_to_login(_way_back(request))
    query = get_object_or_404(Query, pk=query_id)
    allowed = request.user.has_perm(labels.ADJUDICATE)
    error, status, kept = "", 200, _kept(request.GET.get("unsaved", ""))
    if not allowed:
        error, status = labels.ADJUDICATE_MESSAGE, 403
    elif request.method == "POST":
        error, status = _decide(request, query)
        if not error:
            return redirect("adjudicate", query_id=query.pk)
    # Every annotator's judgment, by name: read only for those who may decide (a refusal shows no queue).
    pending = selectors.disagreements(query, pending_only=True) if allowed else []
    queue = _queue_page(pending[:QUEUE_PAGE])
    # The dashboard counts the undecided (split votes, no final label); the queue also holds disagreements the
    # rule already decided (relevant against unsure): the page says both, so the two numbers meet.
    undecided = sum(item["decided_by"] == Decision.UNDECIDED for item in pending)
    context = {
        "query": query, "queue": queue, "pending": len(pending), "undecided": undecided,
        "decided": len(pending) - undecided, "allowed": allowed, "error": error, "kept": kept if allowed else None,
    }  # fmt: skip
    return render(request, "annotator/adjudicate.html", context, status=status)


def _way_back(request: SignedInRequest) -> str:
    """The queue's address for the login page to return to, carrying a decision the ended session could not save."""
    back = request.path
    if request.method == "POST" and (image_id := strict_id(request.POST.get("image"))) is not None:
        value = request.POST.get("value", "")
        if value in LabelValue.values:
            back += "?" + urlencode({"unsaved": f"{image_id}:{value}"})
    return back


def _queue_page(pending: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The queue's page: each image with its file and every judgment and blind vote in words."""
    images = Image.objects.select_related("taxon").in_bulk([item["image"] for item in pending])
    return [
        {
            **item,
            "file": images[item["image"]],
            "final_said": VALUE_WORDS.get(item["final"], item["final"]),
            "judgments": [{**judgment, "said": VALUE_WORDS[judgment["value"]]} for judgment in item["judgments"]],
            "blind_votes": [{**vote, "said": VALUE_WORDS[vote["value"]]} for vote in item.get("blind_votes", [])],
        }
        for item in pending
        if item["image"] in images
    ]


def _kept(said: str) -> dict[str, Any] | None:
    """The decision the session's end kept from being saved, to send again ({"image", "value", "said"}), or None for
    none or a malformed one."""
    image, _, value = said.partition(":")
    image_id = strict_id(image)
    if image_id is None or value not in LabelValue.values:
        return None
    return {"image": image_id, "value": value, "said": LabelValue(value).label.lower()}


def _decide(request: SignedInRequest, query: Query) -> tuple[str, int]:
    """Apply the posted decision; ("", 200) when done, else (why not, status)."""
    image_id, value = strict_id(request.POST.get("image")), request.POST.get("value", "")
    if image_id is None or not Image.objects.filter(pk=image_id).exists():
        return "Choose an image of the queue (the form sent no known image id).", 400
    if value not in LabelValue.values:
        return f"Decide relevant, not relevant or unsure (not {value[:40]!r}).", 400
    try:
        labels.adjudicate(query_id=query.pk, image_id=image_id, value=value, user=request.user)
    except labels.LabelRefused as refused:
        return str(refused), 403
    except labels.NoDisagreement as error:
        return str(error), 409
    messages.success(request, f"Image {image_id}: final label {LabelValue(value).label.lower()}.")
    return "", 200


@login_required
@permission_required("annotator.view_label", raise_exception=True)
def agreement_page(request: SignedInRequest) -> HttpResponseBase:
    """The project's agreement figures (without bootstrap intervals, which `manage.py agreement` adds)."""
    sight = visibility.of(request)
    # The figures of a query where the viewer still judges images blind would tell how the others voted.
    withheld = sorted(sight.hidden)
    shown = list(Query.objects.exclude(pk__in=withheld).values_list("pk", flat=True)) if withheld else None
    figures = agreement.cached_report(shown, resamples=0)  # from the background, never computed in the request
    context = {"figures": figures, "computing": figures is None, "withheld": withheld}
    return render(request, "annotator/agreement.html", context)


ANNOTATOR_COLUMNS = [
    ("annotator", "annotator"), ("labels", "labels"), ("actions", "actions"), ("active_seconds", "active"),
    ("seconds_per_label", "s per label"), ("labels_per_positive", "labels per positive"),
    ("agreement_with_final", "agreement with final"), ("first_pass_acceptance", "first-pass acceptance"),
    ("overturned", "overturned"), ("kappa_vs_gold", "kappa vs gold"), ("accuracy_dawid_skene", "Dawid-Skene"),
    ("items", "items"),
]  # fmt: skip
QUERY_COLUMNS = [
    ("query", "query"), ("labels", "labels"), ("actions", "actions"), ("active_seconds", "active"),
    ("seconds_per_label", "s per label"), ("positives", "positives"), ("labels_per_positive", "labels per positive"),
]  # fmt: skip


@login_required
@permission_required("annotator.view_label", raise_exception=True)
@require_GET
def team_report(request: SignedInRequest) -> HttpResponseBase:
    """What the benchmark cost and how good each annotator is (annotator.team.costs): computed in the background,
    the page asking again until it is there; withheld from a viewer some overlap sample is sealed to."""
    withheld = visibility.of(request).withheld_anywhere()
    found = None if withheld else costs.cached_report()
    if failed := costs.failure(found):
        withheld, found = failed, None  # said where the report would be, in place of "computing"
    context: dict[str, Any] = {
        "withheld": withheld, "computing": found is None and not withheld, "report": found,
        "annotator_columns": ANNOTATOR_COLUMNS, "query_columns": QUERY_COLUMNS,
    }  # fmt: skip
    if found is not None:
        context["annotators"], context["sort"] = costs.sorted_rows(
            found["annotators"], request.GET.get("sort", "annotator"), "annotator"
        )
        context["queries"], context["query_sort"] = costs.sorted_rows(
            found["queries"], request.GET.get("query_sort", "query"), "query"
        )
        context["plot"] = mark_safe(plot.seconds_per_label(found["days"]))  # built and escaped by plot.py
        context["lines"] = {row["query"]: costs.cost_line(row) for row in found["queries"]}
    return render(request, "annotator/team_report.html", context)
