"""The query list (home): progress, search, sort and the form that adds a query; and the API key page."""

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.db import IntegrityError, transaction
from django.db.models import Q
from django.http import HttpResponseBase
from django.shortcuts import redirect, render

from annotator import labels
from annotator.api.tokens import current_token, new_token, revoke_token
from annotator.inquire.exporters import EXPORTS
from annotator.labels import selectors, visibility
from annotator.models import Query, duplicate_text_message, text_key
from annotator.progress import figures
from annotator.web.query_form import QueryForm
from common.http import SignedInRequest


@login_required
def home(request: SignedInRequest) -> HttpResponseBase:
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
    counted = selectors.with_label_counts(Query.objects.all())
    if search := request.GET.get("search", "").strip():
        counted = counted.filter(
            Q(text__icontains=search) | Q(category__icontains=search) | Q(supercategory__icontains=search)
        )
    sort = request.GET.get("sort", "id")
    sight = visibility.of(request)
    queries = figures.with_completeness(sight.count_queries(list(selectors.sorted_by(counted, sort))))
    if any(query.withheld for query in queries):  # the stored order reads the hidden labels: sort what they see
        queries = selectors.sorted_list(queries, sort)
    adjudicates = request.user.has_perm(labels.ADJUDICATE)
    if adjudicates:  # the adjudicator's way in: each query's queue, from the list
        undecided = selectors.undecided_by_query(queries)
        for query in queries:
            query.undecided = undecided.get(query.pk, 0)  # read by the template
    return render(
        request,
        "annotator/home.html",
        {
            "queries": queries,
            "exports": list(EXPORTS),
            "form": form,
            "search": search,
            "sort": sort,
            "run_goal": figures.RUN_GOAL,
            "adjudicates": adjudicates,
        },
    )


@login_required
def api_token(request: SignedInRequest) -> HttpResponseBase:
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
