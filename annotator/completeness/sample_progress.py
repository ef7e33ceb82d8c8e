"""How far a check's sample has been looked at (reads only): which pairs wait for a look, which for an adjudicator,
the positives counted, and the figures every report shows of it.

A pair's look counts only when given after the draw (annotator.completeness.certify says why), `looks` of them
wanted; a check drawn before issue 62 (looks 0) read two judgments in all, whenever given. A look that calls the
pair relevant or unsure, or looks that split, send it to the adjudicator whatever the old votes say. Whether a pair
waits for a look depends on how many judged it, never on what they said, so blind judges learn nothing from it.
"""

from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.db.models import Count, OuterRef, Subquery
from django.db.models.functions import Coalesce

from annotator.completeness import looks as look_bounds
from annotator.models import UNDECIDED, CompletenessCheck, Decision, Judgment, Label, Query

# The values that count as a positive in the sample: unsure counts, so that doubt never helps a claim.
SAMPLE_POSITIVE = look_bounds.CALLED


@dataclass(frozen=True)
class Progress:
    size: int
    labeled: int  # sampled images with all their looks
    positives: int  # sampled images an adjudicator called relevant or unsure (with second looks off: final label)
    second: list[int]  # sampled images waiting for another blind look
    adjudication: list[int]  # sampled images waiting for an adjudicator: split looks, or a positive to confirm
    unjudged: list[int]  # sampled images nobody has judged, in the sample's order
    order: list[int]  # the sample, in its random order

    @property
    def pending(self) -> int:
        return len(self.second) + len(self.adjudication)

    @property
    def complete(self) -> bool:
        return not self.unjudged and not self.pending


def sample_figures(parts: Iterable[Progress]) -> dict[str, int]:
    """A sample's figures as every report shows them (one query's check: one part; the benchmark's: a part per
    query), in images, and they add up: size = labeled + waiting_for_look + left; the images waiting for an
    adjudicator are among those labeled (their looks are in) and `pending` is both waits together."""
    parts = list(parts)
    figures = {
        "size": sum(p.size for p in parts),
        "labeled": sum(p.labeled for p in parts),
        "positives": sum(p.positives for p in parts),
        "pending": sum(p.pending for p in parts),
        # Counted, not listed: a check decided early keeps how many of its pairs were looked at, not which.
        "left": sum(p.size - p.labeled - len(p.second) for p in parts),
        "waiting_for_look": sum(len(p.second) for p in parts),
        "waiting_for_adjudicator": sum(len(p.adjudication) for p in parts),
    }
    return figures


def withheld_figures(size: int) -> dict[str, int | None]:
    """A sample's figures for a viewer who judges some of it blind: its size alone (how many looks were given would
    tell who has judged what they judge)."""
    return {"size": size, **dict.fromkeys(SAMPLE_FIGURES, None)}


SAMPLE_FIGURES = ("labeled", "positives", "pending", "left", "waiting_for_look", "waiting_for_adjudicator")


def judged_by_everyone(query: Query, image_ids: list[int]) -> list[int]:
    """Those of `image_ids` (a check's images still wanting a look) that every person who has judged any image of
    `query` has judged already: nobody on the query's team can give them a fresh look, so they wait for someone new
    (reads only; names nobody and no vote, so blind viewers may read it)."""
    if not image_ids:
        return []
    team = set(Judgment.objects.filter(query=query).values_list("annotator_id", flat=True).distinct())
    if not team:
        return []
    judged: dict[int, set[int]] = {}
    for image_id, annotator_id in Judgment.objects.filter(query=query, image_id__in=image_ids).values_list(
        "image_id", "annotator_id"
    ):
        judged.setdefault(image_id, set()).add(annotator_id)
    return [image_id for image_id in image_ids if judged.get(image_id, set()) >= team]


def fresh_since(check: CompletenessCheck) -> datetime | None:
    """From when a judgment is a look of `check` (its draw); None for a check drawn before issue 62, whose images
    wanted two judgments in all."""
    return check.created_at if check.looks else None


def looks_at(
    query: Query, sample: list[int], second_judgments: bool = True, since: Any = None, looks: int = 0
) -> Progress:
    """The looks a check's `sample` of `query` has had (in the sample's order): which wait for a look, which for an
    adjudicator, and the positives counted (reads only). `since`: only judgments given from then on are looks,
    `looks` of them wanted; None: the older rule, every judgment counts and two are wanted."""
    counts, called = _looks_given(query, sample, since)
    if since is not None:
        wanted = max(1, looks)
    else:
        wanted = max(2, query.judgments_wanted) if second_judgments else 1
        called = set()  # the older rule reads the final label alone
    looked = [image_id for image_id in sample if counts.get(image_id, 0) >= wanted]
    adjudication, positives = _decided_or_waiting(query, looked, called, second_judgments)
    return Progress(
        size=len(sample),
        labeled=len(looked),
        positives=positives,
        second=[image_id for image_id in sample if 0 < counts.get(image_id, 0) < wanted],
        adjudication=adjudication,
        unjudged=[image_id for image_id in sample if not counts.get(image_id, 0)],
        order=sample,
    )


def _looks_given(query: Query, sample: list[int], since: Any) -> tuple[dict[int, int], set[int]]:
    """How many judgments each sampled image has (from `since` on, where given), and those any of them called a
    positive."""
    given = Judgment.objects.filter(query=query, image_id__in=sample)
    if since is not None:
        given = given.filter(created_at__gte=since)
    counts: dict[int, int] = {}
    called: set[int] = set()
    for image_id, value in given.values_list("image_id", "value"):
        counts[image_id] = counts.get(image_id, 0) + 1
        if value in SAMPLE_POSITIVE:
            called.add(image_id)
    return counts, called


def _decided_or_waiting(
    query: Query, looked: list[int], called: set[int], second_judgments: bool
) -> tuple[list[int], int]:
    """Of the images that had their looks: those waiting for an adjudicator (sorted), and the positives counted."""
    rows = Label.objects.filter(query=query, image_id__in=looked).values_list("image_id", "value", "decided_by")
    finals = {image_id: (value, decided_by) for image_id, value, decided_by in rows}
    adjudication, positives = [], 0
    for image_id in looked:
        value, decided_by = finals.get(image_id, ("", ""))
        # A look that called it a positive, or looks that split, go to the adjudicator whatever the old votes say.
        doubted = value in SAMPLE_POSITIVE or image_id in called
        if value == UNDECIDED or (second_judgments and doubted and decided_by != Decision.ADJUDICATED):
            adjudication.append(image_id)
        elif value in SAMPLE_POSITIVE:
            positives += 1
    return sorted(adjudication), positives


NOTHING = Progress(0, 0, 0, second=[], adjudication=[], unjudged=[], order=[])


@dataclass
class CheckProgress:
    """A check's looks, per query of its strata (a query's check: one)."""

    per_query: dict[int, Progress] = field(default_factory=dict)

    def of(self, query_id: int) -> Progress:
        return self.per_query.get(query_id, NOTHING)

    @property
    def size(self) -> int:
        return sum(p.size for p in self.per_query.values())

    @property
    def labeled(self) -> int:
        return sum(p.labeled for p in self.per_query.values())

    @property
    def positives(self) -> int:
        return sum(p.positives for p in self.per_query.values())

    @property
    def pending(self) -> int:
        return sum(p.pending for p in self.per_query.values())

    @property
    def unjudged(self) -> int:
        return sum(len(p.unjudged) for p in self.per_query.values())

    @property
    def complete(self) -> bool:
        return all(p.complete for p in self.per_query.values())


def sample_of(check: CompletenessCheck) -> dict[int, list[int]]:
    """{query id: its sampled images in the sample's order}."""
    by_query: dict[int, list[int]] = defaultdict(list)
    for query_id, image_id in check.images.order_by("position").values_list("query_id", "image_id"):
        by_query[query_id].append(image_id)
    return dict(by_query)


def progress(check: CompletenessCheck) -> CheckProgress:
    """How far `check`'s labeling has come, per query, read from the judgments and final labels now."""
    sample = sample_of(check)
    queries = {query.pk: query for query in Query.objects.filter(pk__in=list(sample))}
    since = fresh_since(check)
    return CheckProgress(
        {
            query_id: looks_at(queries[query_id], ids, check.second_judgments, since=since, looks=check.looks)
            for query_id, ids in sample.items()
        }
    )


def some_pair_wants_a_look(check: CompletenessCheck, below: int | None = None) -> bool:
    """Whether a sampled pair (`below`: of the first `below` in the sample's order) has fewer looks than any check
    wants (so the decision waits for it), in one query of the database: the least a check wants is its `looks`, or
    one (a check before issue 62 wanted one or two)."""
    given = Judgment.objects.filter(query=OuterRef("query"), image=OuterRef("image"))
    if check.looks:
        given = given.filter(created_at__gte=check.created_at)
    counted = given.order_by().values("query").annotate(n=Count("id")).values("n")
    pairs = check.images.all() if below is None else check.images.filter(position__lt=below)
    pairs = pairs.annotate(looks=Coalesce(Subquery(counted), 0))
    return pairs.filter(looks__lt=check.looks or 1).exists()


def first_stage_of(check: CompletenessCheck, query: Query, whole: Progress) -> Progress | None:
    """The looks at `check`'s first stage, its first `first_stage` pairs of `query` in the sample's order (`whole`:
    the sample's progress); None for a check in one stage."""
    if not check.first_stage:
        return None
    first = whole.order[: check.first_stage]
    return looks_at(query, first, check.second_judgments, since=fresh_since(check), looks=check.looks)


def handed_out(check: CompletenessCheck, whole: Progress) -> list[int]:
    """The pairs of `check` of a query handed out for looks now, in the sample's order (`whole`: the query's part of
    its progress): its first stage's alone while any of them wants a look, from anyone (a first stage that counts
    none certifies without the others: annotator.completeness.certify.staged_sizes), so that no look is spent on
    the rest before the first stage has decided; then the whole sample. One who may not look at the first stage's
    last pairs (they judged them before the draw) waits for the others. Whether a pair wants a look depends on how
    many judged it, never on what they said, so a blind judge learns nothing from which pairs they are handed."""
    first = whole.order[: check.first_stage]
    wanting = set(whole.unjudged) | set(whole.second)
    if check.first_stage and any(image_id in wanting for image_id in first):
        return first
    return whole.order


def progress_of(check: CompletenessCheck, query: Query) -> Progress:
    """`check`'s pairs of `query` and their looks (one query's part of `progress`, read without the others')."""
    ids = list(check.images.filter(query=query).order_by("position").values_list("image_id", flat=True))
    return looks_at(query, ids, check.second_judgments, since=fresh_since(check), looks=check.looks)
