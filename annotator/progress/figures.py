"""How complete a query's labeling is: the numbers on the dashboard.

The claim of its latest completeness check (annotator.completeness.checks: recall at least a target with a stated
confidence over a frame), and beside it two signals with no guarantee: INQUIRE's not-relevant run (below) and RMIR's
tail-negativeness. The old point estimate of the share of positives found (recall_estimate, stopping.py) left the
pages: under an annotator wrong 5% of the time it was off by 38 to 57 points and never reached 90% (issue 39,
bench/RESULTS.md); the simulator still measures it beside the claims.

INQUIRE's rule: without species filters, annotators keep labeling down the
ranking until at least 100 images in a row are not relevant. The run shown is
the number of consecutive not-relevant labels at the deepest labeled ranks:
labeled images ordered by their similarity to the query text, counted from the
bottom up to the first label that is not "not relevant".
"""

import hashlib
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np
from django.db import transaction
from django.db.models import Avg, Count, Q
from django.db.models.functions import TruncDate

from annotator.completeness import checks, claims
from annotator.labels import selectors, visibility
from annotator.labels.selectors import CountedQuery
from annotator.models import Judgment, Label, LabelEvent, LabelValue, Query
from annotator.progress import stopping
from common import background
from common.cached_figures import BackgroundFigure
from search.facade import SearchUnavailable, rank, score_images

RUN_GOAL = 100


# annotator/tasks.py: computes and caches a list of queries' figures (refresh, below).
REFRESH_TASK = "annotator.refresh_progress"
SIGNALS = BackgroundFigure("signals", REFRESH_TASK)


def ranked_label_values(query: Query) -> list[str] | None:
    """The query's label values in the order of its text ranking (best first); None with no index."""
    labels = list(Label.objects.filter(query=query).values_list("image_id", "value"))
    if not labels:
        return []
    try:
        scores = score_images(text=query.text, image_ids=[image_id for image_id, _ in labels])
    except SearchUnavailable:
        return None
    return [
        value
        for (_, value), score in sorted(
            zip(labels, scores, strict=True), key=lambda pair: -np.nan_to_num(pair[1], nan=-2.0)
        )
    ]


def label_order_signals(query: Query) -> dict[str, Any]:
    """The two completeness signals read off the labels in ranking order: INQUIRE's not-relevant run and
    RMIR's tail-negativeness score (TSR); None each when there is no index."""
    ranked = ranked_label_values(query)
    if ranked is None:
        return {"run": None, "tsr": None}
    return {"run": stopping.trailing_not_relevant(ranked), "tsr": stopping.tail_negativeness(ranked)}


def cached_signals(query: Query, labeled: int, last_activity: datetime | None) -> dict[str, Any]:
    """label_order_signals, cached until the query's labels (count, last change) or its text change:
    ranking every label needs the query's text vector and a pass over the labeled images."""
    signals: dict[str, Any] = SIGNALS.computed(
        _parts(query, labeled, last_activity), partial(label_order_signals, query)
    )
    return signals


def recall_estimate(
    text: str, relevant_ids: Sequence[int], not_relevant_ids: Sequence[int]
) -> stopping.RecallEstimate | None:
    """The share of the query's positives found so far, estimated from its labels and the feedback
    model's scores (annotator/progress/stopping.py); None before there is enough to estimate from or when
    there is no index."""

    def score(
        image_ids: Sequence[int],
        relevant: Sequence[int],
        not_relevant: Sequence[int],
        exclude: Sequence[int] | None = None,
    ) -> Any:
        if exclude is None:
            return score_images(
                text=text,
                image_ids=image_ids,
                strategy="feedback",
                relevant_ids=relevant,
                not_relevant_ids=not_relevant,
            )
        hits = rank(
            strategy="feedback",
            text=text,
            relevant_ids=relevant,
            not_relevant_ids=not_relevant,
            k=stopping.DEPTH,
            exclude_image_ids=exclude,
        )
        return [hit.score for hit in hits]

    try:
        return stopping.cross_fitted(score, relevant_ids, not_relevant_ids)
    except SearchUnavailable:
        return None


@dataclass(frozen=True)
class RunState:
    """What a page shows of INQUIRE's not-relevant run: the value (None: no index), or that the background is
    computing it."""

    value: int | None
    computing: bool


def figures_or_computing(query: Query, labeled: int, last_activity: datetime | None) -> RunState:
    """The not-relevant run of `query` as cached, else "computing", the background asked. It is not computed in a
    request: it ranks every label, and the cache key moves with every label, so computing on a miss put that
    into every refresh after a save (issue 38). A page showing "computing" polls its fragment, which asks again
    until the value is cached."""
    have_signals, signals = SIGNALS.cached(_parts(query, labeled, last_activity), (query.pk,))
    return RunState(signals["run"], False) if have_signals else RunState(None, True)


def _send_refresh(query_ids: list[int]) -> None:
    """Ask the background to compute and cache the figures of `query_ids`, once the request's transaction
    (if any) commits. With the queue away the page still shows its counts; the figures say "computing"
    until it is back."""

    def send() -> None:
        with suppress(background.QueueUnavailable):
            background.submit(REFRESH_TASK, tuple(query_ids))

    transaction.on_commit(send)


def _parts(query: Query, labeled: int, last_activity: datetime | None) -> tuple[object, ...]:
    """What the signals are cached by: the query's labels (count and last change: its tally's, one row) and its
    text."""
    activity = last_activity.timestamp() if last_activity else None
    return query.pk, labeled, activity, hashlib.md5(query.text.encode()).hexdigest()


def refresh(query_ids: Iterable[int]) -> None:
    """Compute and cache the signals of `query_ids` (the background half of the dashboard)."""
    for query in selectors.with_label_counts(Query.objects.filter(pk__in=list(query_ids))):
        cached_signals(query, query.labeled, query.last_activity)


@dataclass(frozen=True)
class Completeness:
    """How far a query's labeling has come, as the query list and the dashboard show it."""

    run: int | None  # INQUIRE's not-relevant run (None: no index, or `pending`)
    tsr: float | None  # RMIR's tail-negativeness score
    pending: bool  # run and TSR are being computed in the background
    run_met: bool  # the run reached RUN_GOAL
    done_percent: int  # progress toward done: 100 once the run is met or the query is marked done


def with_completeness(queries: list[CountedQuery]) -> list[CountedQuery]:
    """Give each query (annotated by selectors.with_label_counts) its `completeness` (a Completeness): run and
    TSR as cached, and the queries missing them sent to the background in one job. Those are `pending` (the page
    says "computing") until a later visit finds them cached: nothing here reads every label of a query (at 1M
    labels that held the dashboard for 40 s; bench/RESULTS.md). Each also gets `claim`, its latest completeness
    check (or None), read for all of them at once."""
    pending = []
    claims = checks.latest_of([query.pk for query in queries])
    cached = SIGNALS.peek_many({query.pk: _parts(query, query.labeled, query.last_activity) for query in queries})
    for query in queries:
        query.claim = claims.get(query.pk)
        if getattr(query, "withheld", ""):  # the viewer judges images of it blind (annotator.labels.visibility)
            query.completeness = None
            continue
        have_signals, signals = cached[query.pk]
        if not have_signals:
            pending.append(query.pk)
        query.completeness = _completeness(query, signals, have_signals)
    if pending:
        _send_refresh(pending)
    return queries


def _completeness(query: Query, signals: dict[str, Any] | None, have_signals: bool) -> Completeness:
    run = (signals or {}).get("run")
    run_met = run is not None and run >= RUN_GOAL
    finished = run_met or query.status == Query.Status.DONE
    return Completeness(
        run=run,
        tsr=(signals or {}).get("tsr"),
        pending=not have_signals,
        run_met=run_met,
        done_percent=100 if finished else round(100 * min(run or 0, RUN_GOAL) / RUN_GOAL),
    )


def _judges_seen(query: Query, sight: visibility.Sight) -> list[str]:
    """Who judged `query` as the viewer may know it: judges of the images sealed to them are not told."""
    judged = sight.judged(Judgment.objects.filter(query=query, annotator__isnull=False))
    return sorted(set(judged.values_list("annotator__username", flat=True)))


def dashboard(
    *, sight: visibility.Sight | None = None, sort: str = "id", status: str = "", split: str = ""
) -> tuple[list[CountedQuery], dict[str, Any]]:
    """Every query with its counts, annotators and not-relevant run, as `sight` (an annotator.labels.visibility.Sight:
    a viewer's) may see them, else whole; and the totals row."""
    queries = _listed(sight, sort, status, split)
    _with_people_and_labels(queries, sight)
    with_completeness(queries)
    totals = {
        "queries": len(queries),
        "labeled": sum(q.labeled for q in queries),
        "relevant": sum(q.relevant for q in queries),
        "unsure": sum(q.unsure for q in queries),
        "undecided": sum(q.undecided for q in queries),
        "run_met": sum(q.completeness.run_met for q in queries if q.completeness),
        "certified": sum(1 for q in queries if q.claim and q.claim.status == "certified" and not _withheld(q)),
        "fully_labeled": sum(q.fully_labeled == Query.FullyLabeled.YES for q in queries),
    }
    return queries, totals


def _listed(sight: visibility.Sight | None, sort: str, status: str, split: str) -> list[CountedQuery]:
    """The dashboard's queries with their label counts (as `sight` may count them), filtered and sorted."""
    counted = selectors.with_label_counts(Query.objects.all())
    if status:
        counted = counted.filter(status=status)
    if split:
        counted = counted.filter(split=split)
    queries = list(selectors.sorted_by(counted, sort))
    if sight is not None and any(query.withheld for query in sight.count_queries(queries)):
        queries = selectors.sorted_list(queries, sort)  # the stored order reads the sealed labels
    return queries


def _with_people_and_labels(queries: list[CountedQuery], sight: visibility.Sight | None) -> None:
    """Each query's annotators (as `sight` may know them), assignees and its choices' words."""
    annotators = selectors.annotators_by_query(queries)
    assigned = selectors.assignments_by_query(queries)
    # The choices' labels looked up once: get_FOO_display hashes every choice on each call (6% of the page's
    # time under cProfile at 250 rows).
    statuses, fully = dict(Query.Status.choices), dict(Query.FullyLabeled.choices)
    for query in queries:
        query.annotators = annotators.get(query.pk, [])
        if sight is not None and query.withheld:  # who judged its sealed images is theirs to know
            query.annotators = _judges_seen(query, sight)
        query.assigned = assigned.get(query.pk, [])
        query.status_label = statuses.get(query.status, query.status)
        query.fully_labeled_label = fully.get(query.fully_labeled, query.fully_labeled)


def _withheld(query: CountedQuery) -> bool:
    return bool(getattr(query, "withheld", ""))


def activity(query: Query) -> dict[str, Any]:
    """Label changes per day and each annotator's judgments, for the query's small charts."""
    per_day = list(
        LabelEvent.objects.filter(query=query)
        .annotate(day=TruncDate("created_at"))
        .values("day")
        .annotate(n=Count("id"))
        .order_by("day")
    )
    per_annotator = list(
        Judgment.objects.filter(query=query)
        .values("annotator__username")
        .annotate(n=Count("id"), relevant=Count("id", filter=Q(value=LabelValue.RELEVANT)))
        .order_by("-n")
    )
    # Seconds per image: the lead times the labeling page recorded (INQUIRE's annotators took 2.7 s).
    lead_times = dict(
        LabelEvent.objects.filter(query=query, lead_time_ms__isnull=False)
        .values("user__username")
        .annotate(mean=Avg("lead_time_ms"))
        .values_list("user__username", "mean")
    )
    peak = max([row["n"] for row in per_day + per_annotator], default=1)
    for row in per_day + per_annotator:
        row["percent"] = round(100 * row["n"] / peak)
    for row in per_annotator:
        mean = lead_times.get(row["annotator__username"])
        row["seconds_per_image"] = None if mean is None else mean / 1000
    return {"per_day": per_day, "per_annotator": per_annotator}


def side_pane(query: Query, sight: visibility.Sight, counts: dict[str, Any]) -> dict[str, Any]:
    """What the side pane shows: the completeness claim (annotator.completeness.checks) and the not-relevant run, the
    cached value or "computing" (asked of the background: it is not computed in a request); for a viewer judging
    images of the query blind, why the run and the claim's figures are withheld (read off every label, the hidden
    ones too)."""
    withheld = sight.withheld(query.pk)
    shown = {"query": query, "run_goal": RUN_GOAL, "completeness": claims.report(query, withheld=withheld)}
    if withheld:
        return {**shown, "withheld": withheld, "run": None}
    return {**shown, "run": figures_or_computing(query, counts["labeled"], counts["last_activity"])}
