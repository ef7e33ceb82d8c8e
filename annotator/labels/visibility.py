"""What one viewer may see of the labels: the door every route goes through.

Blind double labeling seals each image of a query's overlap sample until an adjudicator decides it or staff
open the sample: an annotator sees nothing of the others' judgments of it nor of its final label, before
judging it (blind) and after (their own judgment only). annotator.labels.sealed.sealed_pairs is the rule.
Hidden means hidden on every route, not only in the grid: the label API's lists, details and filters, the counts
beside the grid and in a save's answer, the not-relevant run and the recall estimate (both read hidden labels),
the dashboards, the agreement figures and the exports. A `Sight` is that rule for one viewer, computed once per request:

- lists of labels, judgments and their history lose the sealed pairs (`labels`, `judged`);
- counts are the stored tallies less the sealed final labels plus the viewer's own judgments of them
  (`counts`, `count_queries`), so they match the tiles the viewer sees;
- figures read off every label (run, TSR, estimate, agreement, the judge panel) are withheld for a query
  where images are sealed to the viewer (`blind_in`, `withheld`); files that carry every label (exports,
  agreement.json, run scoring) are refused while images are sealed to them anywhere they reach (`refusal`).

Adjudicators are never blind (overlap.sealed_pairs), so a Sight of theirs hides nothing and costs one query;
nor is anyone where no overlap sample waits for judgments, the everyday case.
"""

from collections import Counter, defaultdict
from functools import cached_property
from typing import Any

from django.contrib.auth.models import User
from django.db.models import Exists, Max, OuterRef, QuerySet
from django.http import HttpRequest
from django.utils import timezone

from annotator.labels import selectors
from annotator.labels.sealed import Writer, sealed_pairs, sealed_to
from annotator.labels.selectors import CountedQuery
from annotator.models import UNDECIDED, Judgment, Label, LabelValue, Query

# What an answer says in decided_by for a label sealed to its viewer (as_seen): their own judgment stands in.
SEALED = "sealed"
# The tally fields a hidden final label is taken from, by its value.
_COUNTED = {
    LabelValue.RELEVANT: "relevant",
    LabelValue.NOT_RELEVANT: "not_relevant",
    LabelValue.UNSURE: "unsure",
    UNDECIDED: "undecided",
}


class Sight:
    """What `viewer` may see; build one per request (`of(request)`) and pass it down."""

    def __init__(self, viewer: Writer) -> None:
        self.viewer = viewer
        self._by_query: dict[int, dict[int, bool]] = {}

    def sealed_in(self, query_id: int) -> dict[int, bool]:
        """{image id: whether the viewer judged it} for one query's sealed images. A page or a save of one query
        asks only that query's sample (every save does: its counts), not every query's, unless the whole
        picture was read already in this request."""
        if "sealed" in self.__dict__:
            return self.sealed.get(query_id, {})
        if query_id not in self._by_query:
            rows = sealed_to(self.viewer, query=query_id)
            self._by_query[query_id] = {image_id: mine for _, image_id, mine in rows}
        return self._by_query[query_id]

    @cached_property
    def sealed(self) -> dict[int, dict[int, bool]]:
        """{query id: {image id: whether the viewer judged it}} for the images sealed to the viewer, in every
        query where some are."""
        found: dict[int, dict[int, bool]] = defaultdict(dict)
        for query_id, image_id, mine in sealed_to(self.viewer):
            found[query_id][image_id] = mine
        return dict(found)

    @property
    def hidden(self) -> dict[int, frozenset[int]]:
        """{query id: the images whose final label and others' judgments the viewer may not see}."""
        return {query_id: frozenset(images) for query_id, images in self.sealed.items()}

    def hidden_in(self, query_id: int) -> frozenset[int]:
        return frozenset(self.sealed_in(query_id))

    def blind_in(self, query_id: int) -> bool:
        """Whether images of this query are sealed to the viewer (its figures are withheld)."""
        return bool(self.sealed_in(query_id))

    def withheld(self, query_id: int) -> str:
        """The sentence a withheld figure shows, "" where nothing is withheld."""
        sealed = self.sealed_in(query_id)
        if not sealed:
            return ""
        blind = sum(not mine for mine in sealed.values())
        waiting = len(sealed) - blind
        parts = [f"you judge {blind} of this query's images blind"] if blind else []
        if waiting:
            parts.append(f"{waiting} you judged stay sealed until an adjudicator decides them or staff open the sample")
        return f"Hidden while {' and '.join(parts)} (its overlap sample): they would tell how the others voted."

    def withheld_anywhere(self) -> str:
        """The sentence of the first query whose images are sealed to the viewer, "" where none is: for figures
        over every query (the team's cost and quality report)."""
        return next((self.withheld(query_id) for query_id in sorted(self.sealed)), "")

    def refusal(self, query_ids: list[int] | None = None) -> str:
        """Why a file of every label (an export, a scoring) is refused to the viewer, "" where it is not:
        images of one of `query_ids` (None: any query) are sealed to them."""
        sealed = sorted(query_id for query_id in self.sealed if query_ids is None or query_id in query_ids)
        if not sealed:
            return ""
        named = ", ".join(map(str, sealed[:5])) + (" ..." if len(sealed) > 5 else "")
        return (
            f"This file carries every label, and the blind overlap samples of queries {named} are still sealed to "
            "you: it opens to you once an adjudicator decides their images or staff open the samples. Staff who "
            "adjudicate can download it now."
        )

    def refused_check(self, query_ids: list[int] | None = None) -> str:
        """Why a completeness check's cost, draw or frame is refused to the viewer, "" where it is not: images of
        one of `query_ids` (None: any query) are sealed to them, and a frame and its cost are computed from every
        judgment of the query (its positives, its depth, its reviewed images), the sealed ones too."""
        for query_id in sorted(self.sealed) if query_ids is None else sorted(query_ids):
            if sentence := self.withheld(query_id):
                return (
                    f"Query {query_id}: {sentence[0].lower()}{sentence[1:]} A completeness check's cost and frame "
                    "are computed from every judgment of the query: staff who adjudicate can draw it, or open the "
                    "sample first."
                )
        return ""

    def labels(self, found: QuerySet[Label]) -> QuerySet[Label]:
        """A Label queryset without the pairs hidden from the viewer."""
        if not self.hidden:
            return found
        return found.exclude(Exists(self._hidden_pair()))

    def judged(self, found: QuerySet[Any]) -> QuerySet[Any]:
        """A Judgment or LabelEvent queryset (both name whose judgment it is in `annotator`) without other
        people's judgments and changes of the pairs sealed to the viewer; their own stay."""
        if not self.sealed:
            return found
        others = found.exclude(annotator=self.viewer) if self.viewer is not None else found
        return found.exclude(pk__in=others.filter(Exists(self._hidden_pair())).values("pk"))

    def as_seen(self, label: Label) -> Label:
        """`label` as the viewer sees it: itself, or where its image is sealed to them, their own judgment in
        its place (no id, decided_by "sealed"), so that an answer to their save says nothing of the others."""
        if label.image_id not in self.hidden_in(label.query_id):
            return label
        own = Judgment.objects.filter(query_id=label.query_id, image_id=label.image_id, annotator=self.viewer).first()
        return Label(
            id=None, query_id=label.query_id, image_id=label.image_id, value=own.value if own else "",
            decided_by=SEALED, annotator=self.viewer, created_at=own.created_at if own else timezone.now(),
            updated_at=own.updated_at if own else timezone.now(),
        )  # fmt: skip

    def _hidden_pair(self) -> QuerySet[Any]:
        return sealed_pairs(self.viewer).filter(query_id=OuterRef("query_id"), image_id=OuterRef("image_id"))

    def counts(self, query: Query) -> dict[str, Any]:
        """selectors.label_counts as the viewer sees them."""
        counts = selectors.label_counts(query)
        if self.blind_in(query.pk):
            counts.update(self._less_hidden(query.pk, counts))
        return counts

    def count_queries(self, queries: list[CountedQuery]) -> list[CountedQuery]:
        """Queries annotated by selectors.with_label_counts, their counts changed in place to the viewer's;
        each gets `withheld` (the sentence for its figures, "" for none)."""
        if len(queries) > 1:
            self.sealed  # noqa: B018 - one read of every query's sample, not one per row
        for query in queries:
            query.withheld = self.withheld(query.pk)  # read by the templates
            if query.withheld:
                for name, value in self._less_hidden(query.pk, dict(vars(query))).items():
                    setattr(query, name, value)
        return queries

    def _less_hidden(self, query_id: int, counts: dict[str, Any]) -> dict[str, Any]:
        """The counts with each sealed image counted as the viewer sees it (their own judgment, or nothing),
        and the last change among the labels they see."""
        sealed = self.sealed_in(query_id)
        finals = Label.objects.filter(query_id=query_id, image_id__in=list(sealed)).exclude(value="")
        taken = Counter(finals.values_list("value", flat=True))
        mine = [image_id for image_id, judged in sealed.items() if judged]
        own = Judgment.objects.filter(query_id=query_id, image_id__in=mine, annotator=self.viewer)
        given = Counter(own.values_list("value", flat=True))
        changed = {name: counts[name] - taken.get(value, 0) + given.get(value, 0) for value, name in _COUNTED.items()}
        changed["labeled"] = counts["labeled"] - sum(taken.values()) + sum(given.values())
        seen = Label.objects.filter(query_id=query_id).exclude(value="").exclude(image_id__in=list(sealed))
        changed["last_activity"] = seen.aggregate(last=Max("updated_at"))["last"]
        return changed


def of(request: HttpRequest) -> Sight:
    """The request's Sight, made once: every view and serializer of one request sees through the same one.
    A write that changes what the viewer sees (their own judgment ends their blindness on that image) asks
    for a fresh one with `Sight(request.user)`."""
    sight = getattr(request, "_quire_sight", None)
    if not isinstance(sight, Sight):
        user = request.user
        sight = Sight(user if isinstance(user, User) else None)  # AnonymousUser: nobody's judgments
        setattr(request, "_quire_sight", sight)  # noqa: B010 - an attribute of our own on Django's request
    return sight
