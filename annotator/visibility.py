"""What one viewer may see of the labels: the door every route goes through.

Blind double labeling hides, from an annotator who has not judged an image of a query's overlap sample, every
other judgment of it and its final label (annotator.overlap.hidden_pairs is the rule). Hidden means hidden on
every route, not only in the grid: the label API's lists, details and filters, the counts beside the grid and
in a save's answer, the not-relevant run and the recall estimate (both read hidden labels), the dashboards,
the agreement figures and the exports. A `Sight` is that rule for one viewer, computed once per request:

- lists of labels and their history lose the hidden pairs (`labels`, `events`);
- counts are the stored tallies less the hidden final labels (`counts`, `count_queries`), so they match
  the tiles the viewer sees;
- figures read off every label (run, TSR, estimate, agreement, the judge panel) are withheld for a query
  where the viewer is blind (`blind_in`, `withheld`); files that carry every label (exports, run scoring)
  are refused while the viewer is blind anywhere they reach (`refusal`).

Adjudicators are never blind (overlap.hidden_pairs), so a Sight of theirs hides nothing and costs one query.
"""

from collections import Counter, defaultdict
from functools import cached_property

from django.db.models import Exists, Max, OuterRef

from .models import UNDECIDED, Label, LabelValue, Query
from .overlap import Writer, hidden_pairs

# The tally fields a hidden final label is taken from, by its value.
_COUNTED = {
    LabelValue.RELEVANT: "relevant",
    LabelValue.NOT_RELEVANT: "not_relevant",
    LabelValue.UNSURE: "unsure",
    UNDECIDED: "undecided",
}


class Sight:
    """What `viewer` may see; build one per request (`of(request)`) and pass it down."""

    def __init__(self, viewer: Writer):
        self.viewer = viewer

    @cached_property
    def hidden(self) -> dict[int, frozenset[int]]:
        """{query id: the image ids hidden from the viewer}, for every query where something is."""
        found: dict[int, set[int]] = defaultdict(set)
        for query_id, image_id in hidden_pairs(self.viewer).values_list("query_id", "image_id"):
            found[query_id].add(image_id)
        return {query_id: frozenset(ids) for query_id, ids in found.items()}

    def hidden_in(self, query_id: int) -> frozenset[int]:
        return self.hidden.get(query_id, frozenset())

    def blind_in(self, query_id: int) -> bool:
        """Whether the viewer still has images of this query to judge blind (its figures are withheld)."""
        return bool(self.hidden.get(query_id))

    def withheld(self, query_id: int) -> str:
        """The sentence a withheld figure shows, "" where nothing is withheld."""
        left = len(self.hidden_in(query_id))
        if not left:
            return ""
        images = "image" if left == 1 else "images"
        return f"Hidden until you have judged the {left} {images} of this query you are judging blind."

    def refusal(self, query_ids: list[int] | None = None) -> str:
        """Why a file of every label (an export, a scoring) is refused to the viewer, "" where it is not:
        they still judge images blind in one of `query_ids` (None: any query)."""
        blind = sorted(query_id for query_id in self.hidden if query_ids is None or query_id in query_ids)
        if not blind:
            return ""
        left = sum(len(self.hidden[query_id]) for query_id in blind)
        named = ", ".join(map(str, blind[:5])) + (" ..." if len(blind) > 5 else "")
        return (
            f"You still judge {left} images blind (queries {named}), and this file carries every label: judge "
            f"them first, or ask staff who adjudicate for the file."
        )

    def labels(self, found):
        """A Label queryset without the pairs hidden from the viewer."""
        if not self.hidden:
            return found
        return found.exclude(Exists(self._hidden_pair()))

    def events(self, found):
        """A LabelEvent queryset without other people's changes of the pairs hidden from the viewer (their
        own stay: it is their history)."""
        if not self.hidden:
            return found
        others = found.exclude(annotator=self.viewer) if self.viewer is not None else found
        return found.exclude(pk__in=others.filter(Exists(self._hidden_pair())).values("pk"))

    def _hidden_pair(self):
        return hidden_pairs(self.viewer).filter(query_id=OuterRef("query_id"), image_id=OuterRef("image_id"))

    def counts(self, query: Query) -> dict:
        """selectors.label_counts as the viewer sees them."""
        from . import selectors  # selectors reads models only; imported here to keep this module's arrows few

        counts = selectors.label_counts(query)
        if self.blind_in(query.pk):
            counts.update(self._less_hidden(query.pk, counts))
        return counts

    def count_queries(self, queries: list[Query]) -> list[Query]:
        """Queries annotated by selectors.with_label_counts, their counts changed in place to the viewer's;
        each gets `withheld` (the sentence for its figures, "" for none)."""
        for query in queries:
            query.withheld = self.withheld(query.pk)
            if query.withheld:
                for name, value in self._less_hidden(query.pk, vars(query)).items():
                    setattr(query, name, value)
        return queries

    def _less_hidden(self, query_id: int, counts) -> dict:
        """The counts less the hidden final labels, and the last change among the labels the viewer sees."""
        hidden = Label.objects.filter(query_id=query_id, image_id__in=self.hidden_in(query_id))
        by_value = Counter(hidden.exclude(value="").values_list("value", flat=True))
        changed = {name: counts[name] - by_value.get(value, 0) for value, name in _COUNTED.items()}
        changed["labeled"] = counts["labeled"] - sum(by_value.values())
        seen = Label.objects.filter(query_id=query_id).exclude(value="").exclude(image_id__in=self.hidden_in(query_id))
        changed["last_activity"] = seen.aggregate(last=Max("updated_at"))["last"]
        return changed


def of(request) -> Sight:
    """The request's Sight, made once: every view and serializer of one request sees through the same one.
    A write that changes what the viewer sees (their own judgment ends their blindness on that image) asks
    for a fresh one with `Sight(request.user)`."""
    sight = getattr(request, "_quire_sight", None)
    if sight is None:
        user = request.user
        sight = request._quire_sight = Sight(user if user.is_authenticated else None)
    return sight
