"""Blind double labeling: which images of a query get more than one judgment, and what each annotator sees.

Staff draw a query's overlap sample (annotator.team.overlap); until an image of the sample has the query's
`judgments_wanted` judgments, an annotator who has not judged it sees it unlabeled (on the page, in the
candidates API, in Submit), so that their judgment is their own. Everyone else sees the final label, as
without overlap. Nothing here writes a label: annotator.labels does, and keeps every annotator's judgment
apart.
"""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Exists, F, OuterRef, QuerySet, Subquery
from django.db.models.functions import Coalesce

from annotator.models import Judgment, Label, OverlapImage, Query

# Who writes and who views: a user (an annotator, staff), or None for the system itself (an import, a command).
Writer = User | None  # settings.AUTH_USER_MODEL is Django's User
# Who decides disagreements: they read every judgment, so nothing is hidden from them.
ADJUDICATE = "annotator.adjudicate_labels"


def sealed_pairs(
    viewer: Writer, *, query: Query | None = None, image_ids: Iterable[int] | None = None
) -> "QuerySet[Any]":  # OverlapImage rows annotated `judged` and `mine`
    """The overlap-sample rows (query, image) sealed to `viewer`, each annotated `mine` (whether `viewer`
    judged it): images of an overlap sample with fewer judgments than their query wants. The one rule of
    blindness, which the page, the API, the counts and figures, the exports and the admin all ask (through
    annotator.labels.visibility for the routes):

    - not judged by `viewer`: blind, they see the image unlabeled and nothing of its judgments;
    - judged by `viewer`: they see their own judgment, and still nothing of the others' nor of the final
      label until the image has its judgments (else a save's counts would tell them how the other voted,
      and they could change their vote to agree).

    Adjudicators (the permission "can adjudicate") have nothing sealed: deciding disagreements means
    reading every judgment, so they are not the sample's blind judges. `viewer` None is the system (an
    import), which judges like an annotator of its own."""
    rows = _sample_rows(viewer, query, image_ids)
    return rows.none() if _sees_everything(viewer) else rows


def _sample_rows(viewer: Writer, query: Query | int | None, image_ids: Iterable[int] | None) -> "QuerySet[Any]":
    """sealed_pairs before the viewer's role is asked."""
    sample = _sample(query, image_ids)
    judgments = Judgment.objects.filter(query=OuterRef("query"), image_id=OuterRef("image_id"))
    counted = judgments.order_by().values("query").annotate(n=Count("id")).values("n")
    mine = judgments.filter(annotator=viewer) if viewer is not None else judgments.filter(annotator__isnull=True)
    return sample.annotate(judged=Coalesce(Subquery(counted), 0), mine=Exists(mine)).filter(
        judged__lt=F("query__judgments_wanted")
    )


def sealed_to(
    viewer: Writer, *, query: Query | int | None = None, image_ids: Iterable[int] | None = None
) -> list[tuple[int, int, bool]]:
    """sealed_pairs read: [(query id, image id, mine)]. Where no sample is drawn (the everyday save) one plain
    query answers; the rows are read next, and the viewer's role asked only where some are sealed, which
    spares the two queries that load a user's permissions (the load bench's saves took them every time)."""
    if not _sample(query, image_ids).exists():  # the everyday case, asked by a query Django compiles fast
        return []
    rows = list(_sample_rows(viewer, query, image_ids).values_list("query_id", "image_id", "mine"))
    return [] if rows and _sees_everything(viewer) else rows


def _sample(query: Query | int | None, image_ids: Iterable[int] | None) -> "QuerySet[OverlapImage]":
    sample = OverlapImage.objects.all()
    if query is not None:
        sample = sample.filter(query=query)
    if image_ids is not None:
        sample = sample.filter(image_id__in=list(image_ids))
    return sample


def _sees_everything(viewer: Writer) -> bool:
    return viewer is not None and viewer.has_perm(ADJUDICATE)


def blind_images(query: Query, user: Writer, image_ids: Iterable[int] | None = None) -> set[int]:
    """The images of `query`'s overlap sample (among `image_ids` when given) that `user` must judge blind."""
    return {image_id for _, image_id, mine in sealed_to(user, query=query, image_ids=image_ids) if not mine}


def seen_by(query: Query, user: Writer, image_ids: Iterable[int] | None = None) -> dict[int, str]:
    """{image id: the label `user` sees}: their own judgment where they gave one, else the final label,
    except on the images they must judge blind. Images missing from it are unlabeled for them."""
    wanted = None if image_ids is None else list(image_ids)
    finals = Label.objects.filter(query=query).exclude(value="")
    own = Judgment.objects.filter(query=query, annotator=user)
    if wanted is not None:
        finals, own = finals.filter(image_id__in=wanted), own.filter(image_id__in=wanted)
    seen = dict(finals.values_list("image_id", "value"))
    for image_id in blind_images(query, user, wanted):
        seen.pop(image_id, None)
    seen.update(own.values_list("image_id", "value"))
    return seen
