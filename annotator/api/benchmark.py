"""The benchmark claim's endpoints (annotator.completeness.benchmark): draw a check over many queries' frames, read the
latest claim, and each query's frame in it."""

from typing import Any

from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema
from rest_framework import viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotator import labels
from annotator.api import blind_staff, check_schemas
from annotator.completeness import benchmark, check_requests, checks
from annotator.completeness.frames import BadCheck
from annotator.labels import visibility
from common.api_params import BAD_PARAMETERS, ID_SCHEMA, NOT_FOUND, REFUSED, STATE, signed_in, strict_id

DRAW_REFUSED = "Drawing a benchmark check needs the permission to change queries: ask staff."
NO_CHECK = "No benchmark check yet: staff draw one (POST /api/completeness/benchmark/, or the dashboard)."


class BenchmarkCheckViewSet(viewsets.ViewSet):
    """The benchmark's completeness claim: micro-recall over the frames of many queries."""

    parser_classes = [JSONParser]  # its bodies are JSON objects (the schema then says so, not form or multipart)

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **NOT_FOUND},
        description="The latest benchmark check: its status, the claim (micro-recall >= target with its confidence "
        "over the queries' frames), the sample's progress, per query its frame, positives found, share of the "
        "sample and an interval of its recall (reported, not certified), and which queries to label more. Figures "
        "read off sealed judgments are withheld from a viewer who judges some sampled pairs blind.",
    )
    def list(self, request: Request, format: str | None = None) -> Response:  # format: the router's .json suffix
        check = checks.latest()
        if check is None:
            raise NotFound(NO_CHECK)
        return Response(benchmark.report(check, withheld=_withheld(request, check)))

    @extend_schema(
        request={"application/json": check_schemas.BENCHMARK_CHECK},
        responses={200: OpenApiTypes.OBJECT, 201: OpenApiTypes.OBJECT, **BAD_PARAMETERS, **REFUSED, **STATE},
        description='Draw a benchmark check (staff): {"target_recall": 0.9, "confidence": 0.95} over every query, '
        'or "queries": [ids], or "split": "val"; "dry_run": true answers its cost and draws nothing. 201 when '
        "drawn, 200 with the open check.",
    )
    def create(self, request: Request, format: str | None = None) -> Response:
        if not request.user.has_perm(labels.MANAGE_QUERIES):
            raise PermissionDenied(DRAW_REFUSED)
        try:
            asked = check_requests.read_request(request.data, check_requests.BENCHMARK)
        except BadCheck as bad:  # the body is malformed
            raise ValidationError({"detail": str(bad)}) from None
        try:
            blind_staff.refuse_if_blind(request, [query.pk for query in checks.chosen(asked)])
            if asked.dry_run:
                return Response({"dry_run": True, **checks.situation(None, asked).as_json()})
            check, drawn = checks.draw(None, asked, signed_in(request))
        except BadCheck as bad:  # a well-formed request the project's state refuses (unknown queries, no sample, ...)
            return Response({"detail": str(bad)}, status=409)
        return Response(benchmark.report(check, withheld=_withheld(request, check)), status=201 if drawn else 200)

    @extend_schema(
        parameters=[OpenApiParameter("query", ID_SCHEMA, required=True, description="a query id")],
        responses={200: OpenApiTypes.OBJECT, **BAD_PARAMETERS, **REFUSED, **NOT_FOUND},
        description='That query\'s frame in the latest benchmark check: {"image_ids": [...]}. Staff only, and not to '
        "staff some image of the query is sealed to (a frame is made from every judgment).",
    )
    @action(detail=False, methods=["get"])
    def frame(self, request: Request, format: str | None = None) -> Response:
        query_id = strict_id(request.query_params.get("query"))
        if query_id is None:
            raise ValidationError({"detail": '"query" must be a query id, a whole number such as 12.'})
        blind_staff.refuse_frame(request, [query_id])
        ids = benchmark.frame_ids(query_id)
        if ids is None:
            raise NotFound(f"The latest benchmark check holds no query {query_id} (or there is none yet).")
        return Response({"query": query_id, "size": len(ids), "image_ids": ids})


def _withheld(request: Request, check: Any) -> str:
    sight = visibility.of(request)
    for query_id in check.strata.values_list("query_id", flat=True):
        if sentence := sight.withheld(query_id):
            return sentence
    return ""
