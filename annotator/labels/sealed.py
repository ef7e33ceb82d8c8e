"""Blind double labeling: which images of a query get more than one judgment, and what each annotator sees.

Staff draw a query's overlap sample (annotator.team.overlap), and a completeness check seals the images it asks
to be looked at again; an annotator who has not judged such an image sees it unlabeled (on the page, in the
candidates API, in Submit), so that their judgment is their own. It stays sealed after the judgments are in,
until an adjudicator decides it or staff open the sample: a judge who saw the others' votes, or the final label
they make, could change theirs to agree. Each judge's first judgment of a sealed image is kept as their blind
vote (annotator.models.BlindVote), the one the figures count; a later change is a revision, which sends the
image to the adjudicator (annotator.labels.final). Nothing here writes a label: annotator.labels does, and keeps
every annotator's judgment apart.
"""

from collections.abc import Iterable
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Count, Exists, OuterRef, QuerySet
from django.utils import timezone

from annotator.models import BlindVote, Decision, Judgment, Label, OverlapImage, Query

# Who writes and who views: a user (an annotator, staff), or None for the system itself (an import, a command).
Writer = User | None  # settings.AUTH_USER_MODEL is Django's User
# Who decides disagreements: they read every judgment, so nothing is hidden from them.
ADJUDICATE = "annotator.adjudicate_labels"


def sealed_pairs(
    viewer: Writer, *, query: Query | None = None, image_ids: Iterable[int] | None = None
) -> "QuerySet[Any]":  # OverlapImage rows annotated `mine`
    """The overlap-sample rows (query, image) sealed to `viewer`, each annotated `mine` (whether `viewer`
    judged it): images of an overlap sample not yet opened by staff nor decided by an adjudicator. The one
    rule of blindness, which the page, the API, the counts and figures, the exports and the admin all ask
    (through annotator.labels.visibility for the routes):

    - not judged by `viewer`: blind, they see the image unlabeled and nothing of its judgments;
    - judged by `viewer`: they see their own judgment, and still nothing of the others' nor of the final
      label, even once the image has all its judgments (else a save's answer would tell them how the others
      voted, and they could change their vote to agree).

    Adjudicators (the permission "can adjudicate") have nothing sealed: deciding disagreements means
    reading every judgment, so they are not the sample's blind judges. `viewer` None is the system (an
    import), which judges like an annotator of its own."""
    rows = _sample_rows(viewer, query, image_ids)
    return rows.none() if _sees_everything(viewer) else rows


def _sample_rows(viewer: Writer, query: Query | int | None, image_ids: Iterable[int] | None) -> "QuerySet[Any]":
    """sealed_pairs before the viewer's role is asked."""
    judgments = Judgment.objects.filter(query=OuterRef("query"), image_id=OuterRef("image_id"))
    mine = judgments.filter(annotator=viewer) if viewer is not None else judgments.filter(annotator__isnull=True)
    return _sample(query, image_ids).annotate(mine=Exists(mine))


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
    """The sealed rows of the samples: not opened by staff, not decided by an adjudicator."""
    decided = Label.objects.filter(
        query=OuterRef("query"), image_id=OuterRef("image_id"), decided_by=Decision.ADJUDICATED
    )
    sample = OverlapImage.objects.filter(opened_at__isnull=True).exclude(Exists(decided))
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


def seal(query_id: int, image_ids: Iterable[int]) -> int:
    """Put these images of a query under seal (an overlap sample's draw, a check's draw) and keep the judgments
    they already have as their judges' blind votes: those were given before anyone could see the later ones.
    Images already in the sample stay as they are, opened or not. Returns how many were added."""
    wanted = set(image_ids)
    before = set(OverlapImage.objects.filter(query_id=query_id, image_id__in=wanted).values_list("image_id", flat=True))
    added = wanted - before
    OverlapImage.objects.bulk_create(
        [OverlapImage(query_id=query_id, image_id=image_id) for image_id in added], ignore_conflicts=True
    )
    judged = Judgment.objects.filter(query_id=query_id, image_id__in=added, annotator__isnull=False)
    keep_votes(query_id, judged.values_list("image_id", "annotator_id", "value"))
    return len(added)


def keep_votes(query_id: int, votes: Iterable[tuple[int, int, str]]) -> None:
    """Keep (image id, judge id, value) as blind votes where their judges have none yet: the first judgment given
    under seal is the vote, and it is never changed (the one writer of BlindVote rows)."""
    BlindVote.objects.bulk_create(
        [
            BlindVote(query_id=query_id, image_id=image, annotator_id=judge, value=value)
            for image, judge, value in votes
        ],
        ignore_conflicts=True,
    )


def counted_votes(*fields: str, **where: Any) -> dict[tuple[int, int, int], tuple[Any, ...]]:
    """{(query id, image id, judge id): `fields` of the vote the figures count}, over the judgments and blind votes
    `where` selects (filters both share, such as query_id__in): each judge's blind vote where they gave one, revised
    or withdrawn since, else their judgment. An import's labels are nobody's vote. Agreement, kappa, Dawid-Skene and
    the per-look record all read this."""
    keys = ("query_id", "image_id", "annotator_id")
    judged = Judgment.objects.filter(annotator__isnull=False, **where).values_list(*keys, *fields)
    counted = {row[:3]: row[3:] for row in judged.iterator(chunk_size=20_000)}
    voted = BlindVote.objects.filter(**where).values_list(*keys, *fields)
    counted.update((row[:3], row[3:]) for row in voted.iterator(chunk_size=20_000))
    return counted


def revised(query_id: int, image_ids: Iterable[int]) -> set[int]:
    """The images among `image_ids` where some judge's present judgment is not their blind vote (changed, or
    withdrawn): they wait for the adjudicator (annotator.labels.final.decide)."""
    wanted = list(image_ids)
    fields = ("image_id", "annotator_id", "value")
    votes = list(BlindVote.objects.filter(query_id=query_id, image_id__in=wanted).values_list(*fields))
    if not votes:
        return set()
    present = Judgment.objects.filter(query_id=query_id, image_id__in={image_id for image_id, _, _ in votes})
    now = {(image_id, judge): value for image_id, judge, value in present.values_list(*fields)}
    return {image_id for image_id, annotator_id, value in votes if now.get((image_id, annotator_id)) != value}


def open_images(query_id: int, image_ids: Iterable[int] | None = None) -> int:
    """Open these images of a query's sample (all, by default) to everyone: their judgments and final labels show
    again. Their blind votes stay what the figures count. Returns how many were opened."""
    rows = OverlapImage.objects.filter(query_id=query_id, opened_at__isnull=True)
    if image_ids is not None:
        rows = rows.filter(image_id__in=list(image_ids))
    return rows.update(opened_at=timezone.now())


def sealed_queries(query_ids: Iterable[int] | None = None) -> dict[int, int]:
    """{query id: how many of its images are sealed to their judges} among `query_ids` (default all), in id order:
    what a release must wait for (it would publish their votes)."""
    rows = _sample(None, None)
    if query_ids is not None:
        rows = rows.filter(query_id__in=list(query_ids))
    counted = rows.order_by().values("query_id").annotate(n=Count("id")).values_list("query_id", "n")
    return dict(sorted(counted))
