"""Refusals for staff who judge blind: a completeness check's cost, draw and frame are computed from every judgment
of its queries, so they are refused to a viewer some image of those queries is sealed to
(annotator.labels.visibility.Sight.refused_check), and frames are staff's alone."""

from rest_framework.exceptions import PermissionDenied
from rest_framework.request import Request

from annotator import labels
from annotator.labels import visibility

FRAME_REFUSED = "A completeness check's frame is for staff (the permission to change queries)."


def refuse_if_blind(request: Request, query_ids: list[int] | None) -> None:
    """PermissionDenied with its sentence where images of `query_ids` (None: any query) are sealed to the viewer."""
    if refused := visibility.of(request).refused_check(query_ids):
        raise PermissionDenied(refused)


def refuse_frame(request: Request, query_ids: list[int]) -> None:
    """PermissionDenied unless the viewer is staff who sees every judgment of these queries."""
    if not request.user.has_perm(labels.MANAGE_QUERIES):
        raise PermissionDenied(FRAME_REFUSED)
    refuse_if_blind(request, query_ids)
