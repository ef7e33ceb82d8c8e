"""REST API: queries read-only; labels read/write through annotator.labels. (Taxa and images: catalog/api.py.)"""

from typing import Any
from urllib.parse import urlencode

from django.db import transaction
from django.db.models import QuerySet
from django.http import HttpResponse
from drf_spectacular.types import OpenApiTypes
from drf_spectacular.utils import OpenApiParameter, extend_schema, extend_schema_view
from rest_framework import mixins, status, viewsets
from rest_framework.decorators import action
from rest_framework.exceptions import NotFound, PermissionDenied, ValidationError
from rest_framework.parsers import JSONParser
from rest_framework.request import Request
from rest_framework.response import Response

from annotator import labels
from annotator.api import blind_staff, check_schemas
from annotator.api.serializers import (
    AdjudicationSerializer,
    CandidatesSerializer,
    DisagreementsSerializer,
    LabelBatchResultSerializer,
    LabelBatchSerializer,
    LabelSerializer,
    LabelValueSerializer,
    MapPageSerializer,
    QuerySerializer,
)
from annotator.completeness import check_requests, checks, claims, sampled
from annotator.completeness.advice import AIMS
from annotator.completeness.frames import BadCheck, unpack
from annotator.labeling import grid
from annotator.labels import selectors, visibility
from annotator.labels.changes import MAX_LABELS_PER_API_BATCH, BadChanges, read_changes
from annotator.map import points as map_view
from annotator.models import Label, LabelSource, LabelValue, Query
from annotator.team import overlap
from catalog.facade import UnknownTaxon, species_for_all
from catalog.models import Image
from common.api_params import (
    BAD_PARAMETERS,
    CONFLICT,
    ID_SCHEMA,
    NOT_FOUND,
    REFUSED,
    SEARCH_NOT_READY,
    STATE,
    ByIdCursorPagination,
    choice_param,
    counted,
    int_list_param,
    int_param,
    signed_in,
)
from common.database import retry_once_if_dropped
from search.facade import STRATEGIES, BadPolygon, SearchNotReady, SearchUnavailable, images_within, parse_polygon

DRAW_REFUSED = "Drawing a completeness check needs the permission to change queries: ask staff."

CHECK = "check"  # the candidates of a completeness check (annotator.completeness.checks), beside search's strategies


def _check_candidates(query: Query, request: Request, k: int, within: Any) -> list[dict[str, Any]]:
    """The open checks' images the caller has not judged, `k` of them (inside the polygon `within`, where given:
    then the whole sample's unjudged images, a few thousand at most, are read and those inside kept); `share=1`:
    only the caller's own stretch of each sample, as the labeling page shows it (annotator.completeness.sampled)."""
    share = choice_param(request, "share", ["0", "1", "false", "true"]) in ("1", "true")
    if within is None:
        drawn = sampled.candidates(query, signed_in(request), k, share)
    else:
        inside = set(within.tolist())
        drawn = [i for i in sampled.candidates(query, signed_in(request), 1 << 30, share) if i in inside][:k]
    return [
        {"image_id": image_id, "score": None, "rank": n, "source": CHECK, "near_duplicates": []}
        for n, image_id in enumerate(drawn, start=1)
    ]


def _within_param(request: Request) -> Any:  # numpy int64 ids, or None when absent
    """The image ids inside the `within` polygon; 400 with a sentence for a bad polygon."""
    text = request.query_params.get("within")
    if text is None:
        return None
    try:
        return images_within(parse_polygon(text))
    except BadPolygon as error:
        raise ValidationError({"within": str(error)}) from None


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("split", OpenApiTypes.STR, enum=Query.Split.values),
            OpenApiParameter("status", OpenApiTypes.STR, enum=Query.Status.values),
        ],
        responses={200: QuerySerializer(many=True), **BAD_PARAMETERS},
    ),
    retrieve=extend_schema(responses={200: QuerySerializer, **NOT_FOUND}),
)
class QueryViewSet(viewsets.ReadOnlyModelViewSet):
    serializer_class = QuerySerializer

    @extend_schema(
        parameters=[
            OpenApiParameter(
                "strategy",
                OpenApiTypes.STR,
                enum=[*STRATEGIES, CHECK],
                description="default text; check: the open completeness check's images you have not judged",
            ),
            OpenApiParameter("k", OpenApiTypes.INT, description="how many candidates, 1 to 1,000 (default 50)"),
            OpenApiParameter(
                "share",
                OpenApiTypes.STR,
                enum=["0", "1", "false", "true"],
                description="strategy check: 1 for your own stretch of the sample alone, up to where the next "
                "teammate looking at it now is (what the labeling page shows), so that pages loaded at once never "
                "meet; default 0, every image of the check you have not judged",
            ),
            OpenApiParameter("image", OpenApiTypes.INT, many=True, description="example image ids (repeatable)"),
            OpenApiParameter("taxon", OpenApiTypes.STR, many=True, description="taxon names or ids (repeatable)"),
            OpenApiParameter(
                "within",
                OpenApiTypes.STR,
                description="a polygon on the map, x1,y1,x2,y2,x3,y3,... (3 to 150 vertices, edges not crossing), "
                "in the map's coordinates (GET .../map/): only images inside it or on its edge, in the strategy's "
                "order",
            ),
        ],
        responses={200: CandidatesSerializer, **BAD_PARAMETERS, **NOT_FOUND, **SEARCH_NOT_READY},
        description="The next k images with no label for this query, best first, ranked by the strategy "
        "from every label stored so far (relevant as positives, not relevant as negatives).",
    )
    @action(detail=True, methods=["get"])
    def candidates(
        self, request: Request, pk: int | None = None, format: str | None = None
    ) -> Response:  # format: the .json suffix the router allows
        query = self.get_object()
        strategy = choice_param(request, "strategy", [*STRATEGIES, CHECK]) or "text"
        k = int_param(request, "k", high=1001) or 50
        try:
            within = _within_param(request)
        except SearchNotReady as error:  # no map computed yet
            return Response({"detail": str(error)}, status=503)
        if strategy == CHECK:  # the open completeness check's images the caller has not judged
            return Response({"strategy": strategy, "results": _check_candidates(query, request, k, within)})
        examples = int_list_param(request, "image")
        names = [text for text in request.query_params.getlist("taxon") if text.strip()]
        try:
            taxon_ids = species_for_all(names) if names else None
            hits = grid.candidates(
                query, viewer=signed_in(request), strategy=strategy, k=k, example_ids=examples, taxon_ids=taxon_ids,
                within=within,
            )  # fmt: skip
        except SearchNotReady as error:  # no index yet, a vector database away: the service's side
            return Response({"detail": str(error)}, status=503)
        except (UnknownTaxon, SearchUnavailable) as error:
            raise ValidationError({"detail": str(error)}) from None
        results = [
            {"image_id": h.image_id, "score": h.score, "rank": n, "source": h.source, "near_duplicates": list(h.stack)}
            for n, h in enumerate(hits, start=1)
        ]
        return Response({"strategy": strategy, "results": results})

    @extend_schema(
        request=LabelBatchSerializer,
        responses={200: LabelBatchResultSerializer, **BAD_PARAMETERS, **REFUSED, **NOT_FOUND},
        description="Set many labels of this query in one transaction, all or none (unknown images are "
        "refused with their ids). Every change is recorded in the label history, with source api.",
    )
    @action(detail=True, methods=["post"], url_path="labels")
    @retry_once_if_dropped
    def set_labels(
        self, request: Request, pk: int | None = None, format: str | None = None
    ) -> Response:  # format: the .json suffix the router allows
        query = self.get_object()
        try:  # the page's reader (annotator.labels.changes): the same refusals, in the same words
            body = request.data.get("labels") if isinstance(request.data, dict) else None
            items = read_changes(body, limit=MAX_LABELS_PER_API_BATCH)
        except BadChanges as bad:
            raise ValidationError({"detail": str(bad)}) from None
        saved = labels.set_labels(
            query_id=query.pk,
            changes=items,
            user=signed_in(request),
            source=LabelSource.API,
        )
        return Response({"written": sum(s.changed for s in saved), "labels": len(items)})

    @extend_schema(
        parameters=[OpenApiParameter("pending", OpenApiTypes.BOOL, description="only those not adjudicated yet")],
        responses={200: DisagreementsSerializer, **REFUSED, **NOT_FOUND},
        description="The images of this query whose judgments differ, undecided ones first, with every "
        "annotator's judgment and the final label.",
    )
    @action(detail=True, methods=["get"])
    def disagreements(
        self, request: Request, pk: int | None = None, format: str | None = None
    ) -> Response:  # format: the .json suffix the router allows
        query = self.get_object()
        if not request.user.has_perm(labels.ADJUDICATE):  # every annotator's votes, by name: the adjudicators'
            raise PermissionDenied(labels.ADJUDICATE_MESSAGE)
        pending = request.query_params.get("pending", "") in ("1", "true")
        return Response({"results": selectors.disagreements(query, pending_only=pending)})

    @extend_schema(
        request=AdjudicationSerializer,
        responses={200: LabelSerializer, **BAD_PARAMETERS, **REFUSED, **NOT_FOUND, **CONFLICT},
        description='Decide the final label of an image the annotators disagree on (permission "can '
        'adjudicate"; 403 without it). 409 when its judgments agree. Recorded in the label history.',
    )
    @action(detail=True, methods=["post"])
    @retry_once_if_dropped
    def adjudicate(
        self, request: Request, pk: int | None = None, format: str | None = None
    ) -> Response:  # format: the .json suffix the router allows
        query = self.get_object()
        if not request.user.has_perm(labels.ADJUDICATE):
            raise PermissionDenied(labels.ADJUDICATE_MESSAGE)
        decision = AdjudicationSerializer(data=request.data)
        decision.is_valid(raise_exception=True)
        image_id, value = decision.validated_data["image"], decision.validated_data["value"]
        if not Image.objects.filter(pk=image_id).exists():
            raise NotFound(f"No image {image_id} in the collection.")
        try:
            label = labels.adjudicate(query_id=query.pk, image_id=image_id, value=value, user=signed_in(request))
        except labels.NoDisagreement as error:
            return Response({"detail": str(error)}, status=status.HTTP_409_CONFLICT)
        return Response(LabelSerializer(label).data)

    @extend_schema(
        methods=["GET"],
        responses={200: OpenApiTypes.OBJECT, **NOT_FOUND},
        description="The query's completeness claim: its frame (kind, depth, size), target recall and confidence, "
        "method, status (no_check, checking, certified, not_certified), the check's sample (size, labeled, "
        "positives, pending), the recall lower bound and the estimated positives of the frame once decided, and "
        "the next step in one sentence.",
    )
    @extend_schema(
        methods=["POST"],
        request={"application/json": check_schemas.QUERY_CHECK},
        responses={
            200: OpenApiTypes.OBJECT,
            201: OpenApiTypes.OBJECT,
            **BAD_PARAMETERS,
            **REFUSED,
            **NOT_FOUND,
            **STATE,
        },  # fmt: skip
        description="Draw a completeness check (staff: permission to change queries), or continue the open one: "
        '{"target_recall": 0.9, "confidence": 0.95, "frame": {"kind": "top", "depth": 5000}} (frame kinds: '
        'collection; taxa with "taxa": [...]; top with "depth"). {"dry_run": true} answers what it would cost '
        "and draws nothing. 201 when drawn, 200 with the open check.",
    )
    @action(detail=True, methods=["get", "post"], parser_classes=[JSONParser])  # its bodies are JSON objects
    def completeness(
        self, request: Request, pk: int | None = None, format: str | None = None
    ) -> Response:  # format: the .json suffix the router allows
        query = self.get_object()
        if request.method == "POST":
            if not request.user.has_perm(labels.MANAGE_QUERIES):
                raise PermissionDenied(DRAW_REFUSED)
            blind_staff.refuse_if_blind(request, [query.pk])
            try:
                asked = check_requests.read_request(request.data)
            except BadCheck as bad:  # the body is malformed
                raise ValidationError({"detail": str(bad)}) from None
            try:
                if asked.dry_run:
                    return Response({"dry_run": True, **checks.situation(query, asked).as_json()})
                _, drawn = checks.draw(query, asked, signed_in(request))
            except BadCheck as bad:  # a well-formed request the query's state refuses (no labels, no sample, ...)
                return Response({"detail": str(bad)}, status=status.HTTP_409_CONFLICT)
            return Response(self._completeness_seen(query), status=201 if drawn else 200)
        return Response(self._completeness_seen(query))

    def _completeness_seen(self, query: Query) -> dict[str, Any]:
        aim = self.request.query_params.get("claim", "query")
        if aim not in AIMS:
            raise ValidationError({"detail": f'"claim" must be one of {", ".join(AIMS)}, not {aim[:40]!r}.'})
        return claims.report(query, withheld=visibility.of(self.request).withheld(query.pk), aim=aim)

    @extend_schema(
        request=None,
        responses={200: OpenApiTypes.OBJECT, **REFUSED, **NOT_FOUND},
        description="Open the query's blind overlap sample (staff: permission to change queries): its images that "
        "have their judgments show every vote and the final label to everyone from now on; those still waiting for "
        'a judgment stay sealed. Answers {"opened": n, "still_sealed": m}. Blind votes stay what agreement counts.',
    )
    @action(detail=True, methods=["post"], url_path="overlap/open")
    def open_overlap(
        self, request: Request, pk: int | None = None, format: str | None = None
    ) -> Response:  # format: the .json suffix the router allows
        query = self.get_object()
        if not request.user.has_perm(labels.MANAGE_QUERIES):
            raise PermissionDenied("Opening an overlap sample needs the permission to change queries: ask staff.")
        opened, waiting = overlap.open_sample(query)
        return Response({"query": query.pk, "opened": opened, "still_sealed": waiting})

    @extend_schema(
        responses={200: OpenApiTypes.OBJECT, **REFUSED, **NOT_FOUND},
        description="The image ids of the frame of the query's latest completeness check, as frozen at its draw "
        '({"image_ids": [...]}; 404 before any check). Staff only, and not to staff some image of the query is '
        "sealed to (a frame is made from every judgment).",
    )
    @action(detail=True, methods=["get"], url_path="completeness/frame")
    def completeness_frame(
        self, request: Request, pk: int | None = None, format: str | None = None
    ) -> Response:  # format: the .json suffix the router allows
        query = self.get_object()
        blind_staff.refuse_frame(request, [query.pk])
        check = checks.latest(query)
        if check is None:
            raise NotFound(f"Query {query.pk} has no completeness check yet, so no frame: draw one first.")
        frame = check.stratum
        ids = unpack(frame.frame_ids).tolist()
        return Response({"check": check.ordinal, "size": frame.frame_size, "image_ids": ids})

    @extend_schema(
        parameters=[
            OpenApiParameter("after", ID_SCHEMA, description="the cursor: points with a larger image id"),
            OpenApiParameter(
                "page_size", counted(1, map_view.MAX_PAGE), description=f"points per page, 1 to {map_view.MAX_PAGE:,}"
            ),
        ],
        responses={200: MapPageSerializer, **BAD_PARAMETERS, **NOT_FOUND, **SEARCH_NOT_READY},
        description="The map of the collection (manage.py map_layout): each image's x and y, and its label for "
        "this query as the caller sees it (relevant, not_relevant, unsure, undecided, or null; an image of the "
        "caller's blind overlap shows null until they judge it). In image-id order; `next` is the URL of the "
        "next page, null at the end. map/binary/ gives every point at once, as columns.",
    )
    @action(detail=True, methods=["get"], url_path="map")
    def map(self, request: Request, pk: int | None = None, format: str | None = None) -> Response:
        query = self.get_object()
        after = int_param(request, "after")
        size = int_param(request, "page_size", high=map_view.MAX_PAGE + 1)
        if size == 0:
            raise ValidationError({"page_size": f"page_size is 1 to {map_view.MAX_PAGE:,} points."})
        size = size or 10_000
        try:
            points, last = map_view.points_page(query, signed_in(request), after, size)
        except SearchNotReady as error:
            return Response({"detail": str(error)}, status=503)
        following = None
        if last is not None:
            following = request.build_absolute_uri(f"{request.path}?{urlencode({'after': last, 'page_size': size})}")
        return Response({"points": points, "next": following})

    @extend_schema(
        responses={(200, "application/octet-stream"): OpenApiTypes.BINARY, **NOT_FOUND, **SEARCH_NOT_READY},
        description="Every point of the map at once, for the page: a header (8 bytes 'QMAP1', the count and the "
        "length of the layout's version as little-endian uint32, the version, zero-padded to 8 bytes), then the "
        "columns: image ids (int64), x (float32), y (float32), labels (uint8: 0 none, 1 relevant, 2 not "
        "relevant, 3 unsure, 4 undecided).",
    )
    @action(detail=True, methods=["get"], url_path="map/binary")
    def map_binary(self, request: Request, pk: int | None = None, format: str | None = None) -> HttpResponse:
        query = self.get_object()
        try:
            body = map_view.binary(query, signed_in(request))
        except SearchNotReady as error:
            return HttpResponse(str(error), status=503, content_type="text/plain; charset=utf-8")
        response = HttpResponse(body, content_type="application/octet-stream")
        response["Cache-Control"] = "private, no-store"  # labels change with every save
        return response

    @extend_schema(
        parameters=[
            OpenApiParameter("strategy", OpenApiTypes.STR, enum=list(STRATEGIES), description="default text"),
        ],
        responses={
            (200, "application/octet-stream"): OpenApiTypes.BINARY,
            **BAD_PARAMETERS,
            **NOT_FOUND,
            **SEARCH_NOT_READY,
        },
        description="The strategy's score of every map point, in map/binary/'s order, as little-endian float32 "
        "(NaN for an image without a vector); the learning strategies learn from the labels the caller sees. "
        "What the page colours the map by, on demand: it scores the whole collection (2.6 s at 1M on two cores).",
    )
    @action(detail=True, methods=["get"], url_path="map/scores")
    def map_scores(self, request: Request, pk: int | None = None, format: str | None = None) -> HttpResponse:
        query = self.get_object()
        strategy = choice_param(request, "strategy", STRATEGIES) or "text"
        try:
            body = map_view.scores_column(query, signed_in(request), strategy)
        except SearchNotReady as error:
            return HttpResponse(str(error), status=503, content_type="text/plain; charset=utf-8")
        except SearchUnavailable as error:  # a strategy without what it ranks from (examples, a text)
            return HttpResponse(str(error), status=400, content_type="text/plain; charset=utf-8")
        response = HttpResponse(body, content_type="application/octet-stream")
        response["Cache-Control"] = "private, no-store"
        return response

    def get_queryset(self) -> QuerySet[Any]:
        queries = Query.objects.all()
        for field in ("split", "status"):
            if value := choice_param(self.request, field, getattr(Query, field.capitalize()).values):
                queries = queries.filter(**{field: value})
        return queries


@extend_schema_view(
    list=extend_schema(
        parameters=[
            OpenApiParameter("query", ID_SCHEMA),
            OpenApiParameter("image", ID_SCHEMA),
            OpenApiParameter("value", OpenApiTypes.STR, enum=LabelValue.values),
        ],
        responses={200: LabelSerializer(many=True), **BAD_PARAMETERS},
    ),
    retrieve=extend_schema(responses={200: LabelSerializer, **NOT_FOUND}),
    create=extend_schema(
        description="Set your judgment of (query, image); posting an existing pair changes it. The answer is the "
        "final label, or where the image is sealed to you (a blind overlap sample), your own judgment.",
        responses={200: LabelSerializer, 201: LabelSerializer, **BAD_PARAMETERS, **REFUSED, **NOT_FOUND},
    ),
    partial_update=extend_schema(
        request=LabelValueSerializer, responses={200: LabelSerializer, **BAD_PARAMETERS, **REFUSED, **NOT_FOUND}
    ),
    update=extend_schema(
        request=LabelValueSerializer, responses={200: LabelSerializer, **BAD_PARAMETERS, **REFUSED, **NOT_FOUND}
    ),
    destroy=extend_schema(
        description="Remove your judgment: the image goes back to not yet seen for you. The history keeps it. 404 "
        "where you have none (the other annotators' judgments stay theirs).",
        responses={204: None, **REFUSED, **NOT_FOUND},
    ),
)
class LabelViewSet(
    mixins.ListModelMixin,
    mixins.RetrieveModelMixin,
    mixins.CreateModelMixin,
    mixins.UpdateModelMixin,
    mixins.DestroyModelMixin,
    viewsets.GenericViewSet,
):
    serializer_class = LabelSerializer
    pagination_class = ByIdCursorPagination

    def get_queryset(self) -> QuerySet[Any]:
        # What the viewer may see (annotator.labels.visibility): an image they judge blind is not listed, not found
        # by id and not matched by a filter, as if nobody had labeled it yet.
        if getattr(self, "swagger_fake_view", False):  # the schema's generator asks with no request
            return Label.objects.none()
        found = visibility.of(self.request).labels(Label.objects.select_related("annotator"))
        for field in ("query", "image"):
            if (value := int_param(self.request, field)) is not None:
                found = found.filter(**{f"{field}_id": value})
        if chosen := choice_param(self.request, "value", LabelValue.values):
            found = found.filter(value=chosen)
        return found

    @retry_once_if_dropped
    def create(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        serializer = self.get_serializer(data=request.data)
        if not serializer.is_valid():
            # A well-formed id of no query or image names nothing to label: 404, as the per-query routes answer.
            errors: dict[str, Any] = dict(serializer.errors)
            if errors and all(getattr(e, "code", "") == "does_not_exist" for found in errors.values() for e in found):
                raise NotFound(" ".join(f"{name}: {found[0]}" for name, found in errors.items()))
            raise ValidationError(errors)
        query, image = serializer.validated_data["query"], serializer.validated_data["image"]
        # "Changed" (200) or "created" (201) as the viewer sees it: a label hidden from them did not exist for them.
        existed = self.get_queryset().filter(query=query, image=image).exists()
        answer = self._judge(request, query.id, image.id, serializer.validated_data["value"])
        return Response(answer, status=status.HTTP_200_OK if existed else status.HTTP_201_CREATED)

    @retry_once_if_dropped
    def update(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        label = self.get_object()
        serializer = LabelValueSerializer(data=request.data)
        serializer.is_valid(raise_exception=True)
        return Response(self._judge(request, label.query_id, label.image_id, serializer.validated_data["value"]))

    def _judge(self, request: Request, query_id: int, image_id: int, value: str) -> dict[str, Any]:
        """Set the user's judgment and answer with the label as they now see it, in one transaction: a
        database lost while answering takes the write back, so the 503 that follows means nothing was saved."""
        with transaction.atomic():
            label, _ = labels.set_label(
                query_id=query_id, image_id=image_id, value=value, user=signed_in(request), source=LabelSource.API
            )
            answer: dict[str, Any] = self.get_serializer(visibility.Sight(signed_in(request)).as_seen(label)).data
            return answer

    def destroy(self, request: Request, *args: Any, **kwargs: Any) -> Response:
        label = self.get_object()
        had = labels.clear_label(
            query_id=label.query_id, image_id=label.image_id, user=signed_in(request), source=LabelSource.API
        )
        if not had:  # others' judgments are theirs: removing one's own that does not exist removes nothing
            raise NotFound(
                f"You have no judgment of image {label.image_id} for query {label.query_id}: nothing was removed "
                "(the other annotators' judgments stay theirs; staff clear an image for everyone in the admin)."
            )
        return Response(status=status.HTTP_204_NO_CONTENT)
