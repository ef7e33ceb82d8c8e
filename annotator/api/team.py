"""The team's cost and quality report (annotator.team.costs): per annotator and per query. Staff (the permission to
view labels, as the dashboard) read every row; an annotator reads only their own annotator row, and no query's. A
viewer who judges images of an overlap sample blind (or waits for others' judgments of theirs) reads none while the
sample waits: the figures (agreement, overturns, labels per positive) would tell how the others voted.
The figures are computed outside the request and cached until the judgments change: while they are computed the
answer is 202 with `"computing": true` and an empty `results` (ask again in a moment)."""

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.request import Request
from rest_framework.response import Response

from annotator.labels import visibility
from annotator.models import Query
from annotator.team import costs
from common.api_params import BAD_PARAMETERS, ID_SCHEMA, NOT_FOUND, REFUSED, strict_id

VIEW = "annotator.view_label"
QUERY = OpenApiParameter("query", ID_SCHEMA, description="one query's figures (default: every query)")
COMPUTING = {202: OpenApiTypes.OBJECT}


class TeamViewSet(viewsets.ViewSet):
    """What the benchmark cost and how good each annotator is."""

    @extend_schema(
        parameters=[QUERY],
        responses={200: OpenApiTypes.OBJECT, **COMPUTING, **BAD_PARAMETERS, **NOT_FOUND},
        description="Per annotator: labels, actions (a range or a Submit is one), active seconds (lead times capped "
        "at QUIRE_IDLE_CAP_SECONDS), median seconds per label, labels per positive found, agreement with the final "
        "label, first-pass acceptance, votes overturned by an adjudicator and their rate, Cohen's kappa against "
        "adjudicated gold, Dawid-Skene's accuracy, and the items each rests on; null where undefined. Staff read "
        "every annotator, an annotator their own row.",
    )
    @action(detail=False, methods=["get"])
    def annotators(self, request: Request, format: str | None = None) -> Response:
        query_id = _asked_query(request)  # a bad "query" is refused before anything else, blind or not
        if withheld := _withheld(request):
            return Response({"results": [], "withheld": withheld})
        found = costs.cached_report(query_id)
        if found is None:
            return _computing()
        if failed := costs.failure(found):
            return Response({"results": [], "failed": True, "detail": failed})
        rows = found["annotators"]
        if not request.user.has_perm(VIEW):  # an annotator: their own figures only
            rows = [row for row in rows if row["annotator"] == request.user.get_username()]
        return Response({"results": rows, "idle_cap_seconds": found["idle_cap_seconds"]})

    @extend_schema(
        parameters=[QUERY],
        responses={200: OpenApiTypes.OBJECT, **COMPUTING, **BAD_PARAMETERS, **REFUSED, **NOT_FOUND},
        description="Per query (staff): labels, actions, active seconds, median seconds per label, positives (final "
        "labels relevant) and labels per positive.",
    )
    @action(detail=False, methods=["get"])
    def queries(self, request: Request, format: str | None = None) -> Response:
        if not request.user.has_perm(VIEW):
            raise PermissionDenied("The per-query costs are for staff (the permission to view labels).")
        query_id = _asked_query(request)  # a bad "query" is refused before anything else, blind or not
        if withheld := _withheld(request):
            return Response({"results": [], "withheld": withheld})
        found = costs.cached_report(query_id)
        if found is None:
            return _computing()
        if failed := costs.failure(found):
            return Response({"results": [], "failed": True, "detail": failed})
        return Response({"results": found["queries"], "idle_cap_seconds": found["idle_cap_seconds"]})


def _withheld(request: Request) -> str:
    """The sentence that withholds the report from a viewer some overlap sample is sealed to, "" where none is."""
    return visibility.of(request).withheld_anywhere()


def _asked_query(request: Request) -> int | None:
    """The query the report is asked for (None: every query); ValidationError or NotFound saying what to fix."""
    raw = request.query_params.get("query")
    if raw is None:
        return None
    query_id = strict_id(raw)
    if query_id is None:
        raise ValidationError({"query": '"query" must be a query id, a whole number such as 12.'})
    if not Query.objects.filter(pk=query_id).exists():
        raise NotFound(f"No query {query_id}.")
    return query_id


def _computing() -> Response:
    return Response(
        {"computing": True, "results": [], "detail": "The team's figures are being computed: ask again in a moment."},
        status=202,
        headers={"Retry-After": "2"},
    )
