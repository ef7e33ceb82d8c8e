"""Reading label counts per query: one definition for the query list, the labeling page, the
dashboard, the admin and the API, so that they can never disagree."""

from collections.abc import Iterable
from typing import Any, TypeAlias

from django.db.models import Count, F, FloatField, Max, OuterRef, Q, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce

from annotator.labels import sealed
from annotator.labels.checked import CHECKED, sampled_images
from annotator.models import (
    UNDECIDED,
    Assignment,
    BlindVote,
    CompletenessCheck,
    Decision,
    Judgment,
    Label,
    LabelValue,
    OverlapImage,
    Query,
    QueryAnnotator,
    QueryFrame,
    unpack_ids,
)

# A Query row annotated by with_label_counts (labeled, relevant, not_relevant, unsure, undecided, last_activity)
# and, for the pages, given `completeness` and `withheld`: attributes Django and the pages add at run time,
# which the type checker cannot see on the model.
CountedQuery: TypeAlias = Any


def counted_from_labels() -> dict[str, Any]:
    """The counts computed from the label rows themselves: what the tallies must always equal (the tests
    compare them after every kind of write). Costs a scan of every label: 0.85 s at 1M."""
    return {
        "labeled": Count("labels"),
        "relevant": Count("labels", filter=Q(labels__value=LabelValue.RELEVANT)),
        "not_relevant": Count("labels", filter=Q(labels__value=LabelValue.NOT_RELEVANT)),
        "unsure": Count("labels", filter=Q(labels__value=LabelValue.UNSURE)),
        "undecided": Count("labels", filter=Q(labels__value=UNDECIDED)),
        "last_activity": Max("labels__updated_at"),
    }


def _tallied() -> dict[str, Any]:
    """The counts as annotator.labels.tallies keeps them: one row a query (a query never labeled has none: 0)."""
    return {
        name: Coalesce(F(f"tally__{name}"), 0)
        for name in ("labeled", "relevant", "not_relevant", "unsure", "undecided")
    } | {"last_activity": F("tally__last_activity")}


def with_label_counts(queries: "QuerySet[Query]") -> "QuerySet[CountedQuery]":
    """Queries annotated with labeled, relevant, not_relevant, unsure, undecided (counts of final labels),
    last_activity (a time or None) and claim_order (what the completeness column sorts by)."""
    return queries.annotate(**_tallied(), claim_order=_claim_order())


def _claim_order() -> Any:
    """The recall lower bound of the query's latest completeness check; -1 with no check or one still open, so that
    sorting by it puts the best-vouched queries at one end and those with nothing to vouch for at the other."""
    own = CompletenessCheck.objects.filter(claim=CompletenessCheck.Claim.QUERY, query=OuterRef("pk"))
    latest = own.order_by("-ordinal").values("recall_lower_bound")
    return Coalesce(Subquery(latest[:1]), Value(-1.0), output_field=FloatField())


def label_counts(query: Query) -> dict[str, Any]:
    """One query's counts: {"labeled", "relevant", "not_relevant", "unsure", "undecided", "last_activity"}."""
    row = Query.objects.filter(pk=query.pk).annotate(**_tallied()).values(*_tallied()).get()
    return dict(row)


# What the query list and the dashboard can be sorted by: the URL's word -> the field.
QUERY_SORTS = {
    "id": "id",
    "text": "text",
    "status": "status",
    "labeled": "labeled",
    "relevant": "relevant",
    "unsure": "unsure",
    "undecided": "undecided",
    "activity": "last_activity",
    "fully_labeled": "fully_labeled",
    "claim": "claim_order",
}


def sorted_by(queries: "QuerySet[CountedQuery]", sort: str) -> "QuerySet[CountedQuery]":
    """Order annotated queries by `sort`, a key of QUERY_SORTS with an optional leading "-"
    (descending); an unknown key sorts by id. Ties are ordered by id."""
    field = QUERY_SORTS.get(sort.lstrip("-"), "id")
    return queries.order_by(f"-{field}" if sort.startswith("-") else field, "id")


def sorted_list(queries: list[Any], sort: str) -> list[Any]:
    """sorted_by for queries already read, by the counts they now carry (a blind viewer's: visibility);
    no value sorts first, as in the database's ascending order. Ties are ordered by id."""
    field = QUERY_SORTS.get(sort.lstrip("-"), "id")
    present = sorted((q for q in queries if getattr(q, field) is not None), key=lambda q: (getattr(q, field), q.pk))
    if sort.startswith("-"):
        present = sorted(present, key=lambda q: q.pk)
        present = sorted(present, key=lambda q: getattr(q, field), reverse=True)
    absent = [q for q in queries if getattr(q, field) is None]
    return present + absent if sort.startswith("-") else absent + present


def annotators_by_query(queries: Iterable[Query]) -> dict[int, list[str]]:
    """{query id: the user names of those who judged it, sorted} for `queries` (annotator.labels.tallies keeps
    who holds judgments of each query)."""
    names: dict[int, list[str]] = {}
    for query_id, username in QueryAnnotator.objects.filter(query__in=queries, judgments__gt=0).values_list(
        "query_id", "annotator__username"
    ):
        names.setdefault(query_id, []).append(username)
    return {query_id: sorted(users) for query_id, users in names.items()}


def undecided_by_query(queries: Iterable[Query]) -> dict[int, int]:
    """{query id: how many of its final labels are undecided (split, or a revised blind vote)}: what waits for an
    adjudicator, counted in one read for the query list."""
    found = Label.objects.filter(query__in=list(queries), decided_by=Decision.UNDECIDED)
    return dict(found.order_by().values("query_id").annotate(n=Count("id")).values_list("query_id", "n"))


def disagreements(query: Query, *, pending_only: bool = False) -> list[dict[str, Any]]:
    """The images of `query` whose judgments differ (unsure against a vote included), undecided ones first,
    each with every annotator's judgment, the final label and whether an adjudicator decided it:
    [{"image": id, "judgments": [{"annotator": name, "value": v}], "final": v, "decided_by": d}]."""
    judged = _judgments_by_image(query)
    split, revised, confirm = _waiting_for_adjudicator(query, judged)
    rows = Label.objects.filter(query=query, image_id__in=list(split)).values_list("image_id", "value", "decided_by")
    finals = {image_id: (value, decided_by) for image_id, value, decided_by in rows}
    voted = _blind_votes(query, revised)

    def reason(image_id: int) -> str:
        return "confirm" if image_id in confirm else "revised" if image_id in revised else "disagreement"

    found = [
        {
            "image": image_id,
            "judgments": judgments,
            "final": finals.get(image_id, ("", ""))[0],
            "decided_by": finals.get(image_id, ("", ""))[1],
            "reason": reason(image_id),
            **({"blind_votes": voted[image_id]} if image_id in revised else {}),
        }  # fmt: skip
        for image_id, judgments in split.items()
        if image_id not in confirm or finals.get(image_id, ("", ""))[0] in ("relevant", "unsure")
    ]
    if pending_only:
        found = [item for item in found if item["decided_by"] != Decision.ADJUDICATED]
    return sorted(found, key=lambda item: (item["decided_by"] != Decision.UNDECIDED, item["image"]))


def _waiting_for_adjudicator(
    query: Query, judged: dict[int, list[dict[str, Any]]]
) -> tuple[dict[int, list[dict[str, Any]]], set[int], set[int]]:
    """The images an adjudicator is asked about, with their judgments, and among them the revised blind votes and
    the positives to confirm."""
    split = {image_id: found for image_id, found in judged.items() if len({j["value"] for j in found}) > 1}
    # A judge who changed their blind vote (annotator.labels.sealed) has not agreed: the adjudicator decides.
    revised = sealed.revised(query.pk, judged) - set(split)
    split.update({image_id: judged[image_id] for image_id in revised})
    # Positives that wait for an adjudicator's confirmation, beside the disagreements (annotator.completeness.checks):
    # a completeness check's sampled images its looks agree are relevant or unsure (two agreeing mistakes must not
    # count as a positive), and the single-judgment positives of the query's frozen frame (a claim counts only
    # confirmed positives; before any draw, the default frame's: every judged image), leaving out images whose second
    # blind judgment is still to come.
    wanted = max(2, query.judgments_wanted)
    sampled = {i for i in sampled_images(query.pk, judged) if len(judged[i]) >= wanted} - set(split)
    confirm = sampled | (_single_positives_in_frame(query, judged) - set(split))
    split.update({image_id: judged[image_id] for image_id in confirm})
    return split, revised, confirm


def _judgments_by_image(query: Query) -> dict[int, list[dict[str, Any]]]:
    """{image id: [{"annotator": name, "value": v}]} of every judgment of `query`, by annotator name."""
    judged: dict[int, list[dict[str, Any]]] = {}
    for image_id, name, value in (
        Judgment.objects.filter(query=query)
        .order_by("image_id", "annotator__username")
        .values_list("image_id", "annotator__username", "value")
    ):
        judged.setdefault(image_id, []).append({"annotator": name or "(import)", "value": value})
    return judged


def _blind_votes(query: Query, image_ids: set[int]) -> dict[int, list[dict[str, str]]]:
    """{image id: [{"annotator", "value"}]}: the blind votes of revised images, which the adjudicator reads beside the
    judgments as they are now."""
    votes: dict[int, list[dict[str, str]]] = {image_id: [] for image_id in image_ids}
    for image_id, name, value in (
        BlindVote.objects.filter(query=query, image_id__in=image_ids)
        .order_by("image_id", "annotator__username")
        .values_list("image_id", "annotator__username", "value")
    ):
        votes[image_id].append({"annotator": name, "value": value})
    return votes


def _single_positives_in_frame(query: Query, judged: dict[int, list[dict[str, Any]]]) -> set[int]:
    """The single-judgment positives of the query's frame: the frozen one, or before any draw the default frame,
    which holds every image judged (annotator.completeness.frames), so they are routed as they are labeled."""
    single = {i for i, found in judged.items() if len(found) == 1 and found[0]["value"] in CHECKED}
    waiting = set(
        OverlapImage.objects.filter(query=query, image_id__in=list(single)).values_list("image_id", flat=True)
    )
    frame = QueryFrame.objects.filter(query=query).values_list("ids", flat=True).first()
    if frame is None:
        return single - waiting
    in_frame = set(unpack_ids(frame).tolist())
    return {i for i in single - waiting if i in in_frame}


def assignments_by_query(queries: Iterable[Query]) -> dict[int, list[tuple[str, str]]]:
    """{query id: [(user name, role), ...]} for `queries`: who was assigned to what."""
    found: dict[int, list[tuple[str, str]]] = {}
    for query_id, username, role in (
        Assignment.objects.filter(query__in=queries)
        .order_by("role", "annotator__username")
        .values_list("query_id", "annotator__username", "role")
    ):
        found.setdefault(query_id, []).append((username, role))
    return found
