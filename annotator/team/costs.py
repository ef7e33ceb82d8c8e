"""What a benchmark cost, and how good each annotator is: time, labels and quality per annotator and per query.

Time, honestly counted. The labeling page sends, with each single label, how long the annotator looked at the image
before deciding (`lead_time_ms`, kept on the label's event). A lead time over the idle cap (QUIRE_IDLE_CAP_SECONDS,
60 s by default) is a coffee break, not work: it counts as the cap. *Active seconds* are the capped lead times
summed; *seconds per label* their median (and mean) over the labels that carry one.

Actions and labels are counted apart. A label key on one image is one action and one label; a range (Shift), a
look-alike stack, a Submit or an API batch labels many images at once and sends no lead time: its labels, written
by one annotator in one query with one source within ACTION_GAP of each other, are one action. Imports and the
judge panel's pre-labels are nobody's work (no annotator); adjudications are the adjudicator's (reported as such).

Quality, from what the team already does (annotator.team.agreement, the same figures the agreement page shows):
agreement with the final label where it rests on more than the annotator's own vote; first-pass acceptance (the
share of their votes the final label kept); *overturned*, their votes an adjudicator decided the other way, and its
rate over their votes on adjudicated images; Cohen's kappa (scikit-learn) of their votes against adjudicated gold
where at least KAPPA_LEAST such images exist; Dawid-Skene's estimated accuracy (crowd-kit). Each figure is null
where it is undefined, and `items` says how many images the agreement rests on.

`report` reads every judgment and event of the queries asked: it runs outside requests (annotator.tasks.team_report,
cached until the judgments change: `cached_report`), as the team's agreement figures do.
"""

import statistics
from collections import defaultdict
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from django.conf import settings

from annotator.labels.tallies import change_marker
from annotator.models import Decision, Judgment, Label, LabelEvent, LabelSource, LabelValue
from annotator.team import agreement
from common.cached_figures import BackgroundFigure, id_set, ids_part

ACTION_GAP = 1.0  # seconds: labels without a lead time this close together are one action (a range, a Submit)
KAPPA_LEAST = 10  # adjudicated images an annotator's kappa against gold needs
WORK = (LabelSource.CLICK, LabelSource.KEYBOARD, LabelSource.SUBMIT, LabelSource.API, LabelSource.ADMIN)
REPORT_TASK = "annotator.team_report"  # annotator/tasks.py: computes and caches the report (refresh below)
REPORT = BackgroundFigure("team-report", REPORT_TASK)


@dataclass
class _Tally:
    """One annotator's or one query's work: capped lead times, actions, labels."""

    leads: list[float] = field(default_factory=list)  # capped, in seconds
    actions: int = 0
    labels: int = 0
    positives: int = 0  # an annotator's: their relevant votes the final label keeps; a query's: its final positives

    def figures(self) -> dict[str, Any]:
        return {
            "labels": self.labels,
            "actions": self.actions,
            "active_seconds": round(sum(self.leads), 3),
            "seconds_per_label": round(statistics.median(self.leads), 3) if self.leads else None,
            "mean_seconds_per_label": round(statistics.fmean(self.leads), 3) if self.leads else None,
            "timed_labels": len(self.leads),
            "positives": self.positives,
            "labels_per_positive": round(self.labels / self.positives, 3) if self.positives else None,
        }


def idle_cap() -> float:
    return float(settings.QUIRE_IDLE_CAP_SECONDS)


def report(
    query_ids: Iterable[int] | None = None, *, since: datetime | None = None, dawid_skene: bool = True
) -> dict[str, Any]:
    """{"annotators": [a row per annotator], "queries": [a row per query], "overall": the whole's row, "days": [per
    annotator and day], "idle_cap_seconds", "since"}: the figures of the module doc over the judgments of
    `query_ids` (default every query), the time figures over the events since `since` (default all)."""
    cap = idle_cap()
    ids = None if query_ids is None else list(query_ids)
    scope = {} if ids is None else {"query_id__in": ids}
    events = LabelEvent.objects.filter(annotator__isnull=False, source__in=WORK, **scope)
    if since is not None:
        events = events.filter(created_at__gte=since)
    finals = Label.objects.filter(**scope).values_list("query_id", "image_id", "value", "decided_by")
    final = {(query_id, image_id): (value, decided_by) for query_id, image_id, value, decided_by in finals}
    people, queries = _count_labels(Judgment.objects.filter(annotator__isnull=False, **scope), final)
    days = _count_work(events, cap, people, queries)
    # Quality is judged on the blind votes (annotator.labels.sealed): a vote changed after seeing others' is not
    # the annotator's own. The labels counted above are the work done, revisions included.
    quality = _quality(agreement.counted_votes(ids), final, dawid_skene)
    annotators = [
        {"annotator": name, **people[name].figures(), **quality.get(name, _NO_QUALITY)} for name in sorted(people)
    ]
    by_query = [{"query": query_id, **queries[query_id].figures()} for query_id in sorted(queries)]
    return {"annotators": annotators, "queries": by_query, "overall": _whole(queries.values()).figures(), "days": days,
            "idle_cap_seconds": cap,
            "since": since.isoformat() if since else None}  # fmt: skip


def _whole(tallies: Iterable[_Tally]) -> _Tally:
    tallies = list(tallies)
    return _Tally(
        leads=[lead for tally in tallies for lead in tally.leads],
        actions=sum(tally.actions for tally in tallies),
        labels=sum(tally.labels for tally in tallies),
        positives=sum(tally.positives for tally in tallies),
    )


def _count_labels(
    judgments: Any, final: dict[tuple[int, int], tuple[str, str]]
) -> tuple[dict[str, _Tally], dict[int, _Tally]]:
    """Per annotator and per query: the judgments given, and the positives (an annotator's: their "relevant"s the
    final label agrees with; a query's: its relevant final labels)."""
    people: dict[str, _Tally] = defaultdict(_Tally)
    queries: dict[int, _Tally] = defaultdict(_Tally)
    rows = judgments.values_list("query_id", "image_id", "annotator__username", "value")
    for query_id, image_id, name, value in rows.iterator(chunk_size=20_000):
        people[name].labels += 1
        queries[query_id].labels += 1
        if value == LabelValue.RELEVANT and final.get((query_id, image_id), ("", ""))[0] == LabelValue.RELEVANT:
            people[name].positives += 1
    for (query_id, _), (value, _) in final.items():
        queries[query_id].positives += value == LabelValue.RELEVANT
    return people, queries


def _count_work(events: Any, cap: float, people: dict[str, _Tally], queries: dict[int, _Tally]) -> list[dict[str, Any]]:
    """Lead times (capped) and actions from the work events, in the order they were written; and per annotator and
    day (UTC) their timed labels, active seconds and median seconds per label (the team page's plot)."""
    open_batch: dict[tuple[str, int, str], float] = {}  # (annotator, query, source) -> when its last label came
    by_day: dict[tuple[str, str], list[float]] = defaultdict(list)
    ordered = events.order_by("created_at", "id").values_list(
        "annotator__username", "query_id", "source", "lead_time_ms", "created_at"
    )
    for name, query_id, source, lead_ms, created_at in ordered.iterator(chunk_size=20_000):
        if lead_ms is not None:  # one decision on one image
            seconds = min(lead_ms / 1000, cap)
            people[name].leads.append(seconds)
            queries[query_id].leads.append(seconds)
            people[name].actions += 1
            queries[query_id].actions += 1
            by_day[name, created_at.date().isoformat()].append(seconds)
            continue
        key, moment = (name, query_id, source), created_at.timestamp()
        last = open_batch.get(key)
        if last is None or moment - last > ACTION_GAP:  # a new range, stack, Submit or API batch
            people[name].actions += 1
            queries[query_id].actions += 1
        open_batch[key] = moment
    return [
        {"annotator": name, "day": day, "timed_labels": len(leads), "active_seconds": round(sum(leads), 3),
         "seconds_per_label": round(statistics.median(leads), 3)}
        for (name, day), leads in sorted(by_day.items())
    ]  # fmt: skip


_NO_QUALITY: dict[str, Any] = {
    "agreement_with_final": None, "items": 0, "first_pass_acceptance": None, "overturned": 0, "overturn_rate": None,
    "kappa_vs_gold": None, "gold_items": 0, "accuracy_dawid_skene": None,
}  # fmt: skip


def _quality(
    rows: list[tuple[tuple[int, int], str, str]], final: dict[tuple[int, int], tuple[str, str]], dawid_skene: bool
) -> dict[str, dict[str, Any]]:
    """Per annotator: the quality figures of the module doc."""
    with_final = agreement.with_final(rows, final)
    accuracy = (agreement.dawid_skene(agreement.votes_of(rows)) or {}) if dawid_skene else {}
    kept: dict[str, list[bool]] = defaultdict(list)
    gold: dict[str, tuple[list[str], list[str]]] = defaultdict(lambda: ([], []))
    for item, name, value in rows:
        final_value, decided_by = final.get(item, ("", ""))
        if value not in agreement.VOTES or final_value not in agreement.VOTES:
            continue
        kept[name].append(value == final_value)
        if decided_by == Decision.ADJUDICATED:
            gold[name][0].append(value)
            gold[name][1].append(final_value)
    figures = {}
    for name in sorted({name for _, name, _ in rows}):
        theirs, truth = gold[name]
        overturned = sum(a != b for a, b in zip(theirs, truth, strict=True))
        figures[name] = {
            "agreement_with_final": with_final.get(name, {}).get("agreement_with_final"),
            "items": with_final.get(name, {}).get("items", 0),
            "first_pass_acceptance": round(sum(kept[name]) / len(kept[name]), 4) if kept[name] else None,
            "overturned": overturned,
            "overturn_rate": round(overturned / len(theirs), 4) if theirs else None,
            "kappa_vs_gold": _kappa(theirs, truth),
            "gold_items": len(theirs),
            "accuracy_dawid_skene": accuracy.get(name),
        }
    return figures


def _kappa(theirs: list[str], truth: list[str]) -> float | None:
    """Cohen's kappa of an annotator's votes against adjudicated gold (scikit-learn's); None under KAPPA_LEAST
    images, or where it is undefined (one value on both sides)."""
    if len(theirs) < KAPPA_LEAST or len(set(theirs) | set(truth)) < 2:
        return None
    value = agreement.kappa_score(theirs, truth)  # scikit-learn: imported only where a report is computed
    return None if value is None else round(value, 4)


def cached_report(query_ids: int | Iterable[int] | None = None) -> dict[str, Any] | None:
    """The report of one query, of some, or of every query (None) as cached, or None (and its job sent: the page
    asks again) while it is computed. It is cached by the labels' change marker and the idle cap."""
    ids = id_set(query_ids)
    have, found = REPORT.cached(_parts(ids), ids)  # a tuple: a job's arguments are its key in the embedded queue
    return found if have else None


def refresh(query_ids: int | Iterable[int] | None) -> None:
    """Compute and cache the report of `query_ids` (None: every query): the background half of cached_report. A
    report that cannot be computed is cached as its failure (`failure`), so that the pages say so instead of
    "computing" for good; the error is raised again for the job's record, and the next change of the labels
    tries anew (a new marker)."""
    ids = id_set(query_ids)
    parts = _parts(ids)  # read before computing: a write meanwhile moves the marker past what is stored
    try:
        computed = report(None if ids is None else list(ids))
    except Exception as error:
        said = (
            f"The team's figures could not be computed ({type(error).__name__}: {error}). They are tried again after "
            "the next label; the worker's log has the details."
        )
        REPORT.store(parts, {FAILED: said})
        raise
    REPORT.store(parts, computed)


FAILED = "failed"  # the key of a cached report that could not be computed: its sentence


def failure(found: dict[str, Any] | None) -> str:
    """The sentence of a report that could not be computed, "" for one that was (or is still computing)."""
    return str(found.get(FAILED, "")) if found else ""


def _parts(ids: tuple[int, ...] | None) -> tuple[object, ...]:
    return ids_part(ids), change_marker(ids), idle_cap()


def duration(seconds: float) -> str:
    """Active time as the page and the command print it: "1h05m", "12m30s"."""
    minutes, rest = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{rest:02d}s"


def cost_line(row: dict[str, Any]) -> str:
    """One query's (or annotator's) cost in a sentence: "34 min active, 1,210 labels (1,020 actions), 2.4 s per
    label, 61 positives, 19.8 labels per positive"."""
    minutes = row["active_seconds"] / 60
    parts = [
        f"{minutes:,.0f} min active" if minutes >= 1 else f"{row['active_seconds']:.0f} s active",
        f"{row['labels']:,} labels ({row['actions']:,} actions)",
    ]
    if row["seconds_per_label"] is not None:
        parts.append(f"{row['seconds_per_label']:.1f} s per label")
    parts.append(f"{row['positives']:,} positives")
    if row["labels_per_positive"] is not None:
        parts.append(f"{row['labels_per_positive']:.1f} labels per positive")
    return ", ".join(parts)


def sorted_rows(rows: list[dict[str, Any]], sort: str, default: str) -> tuple[list[dict[str, Any]], str]:
    """`rows` ordered by `sort` (a field, "-field" for descending; unknown: `default`), empty figures last; and the
    sort used."""
    field_name = sort.removeprefix("-")
    if not rows or field_name not in rows[0]:
        sort, field_name = default, default.removeprefix("-")
    present = [row for row in rows if row[field_name] is not None]
    missing = [row for row in rows if row[field_name] is None]
    present.sort(key=lambda row: row[field_name], reverse=sort.startswith("-"))
    return present + missing, sort


TEAM_COLUMNS = (
    "labels", "actions", "active_seconds", "seconds_per_label", "mean_seconds_per_label", "timed_labels", "positives",
    "labels_per_positive", "agreement_with_final", "items", "first_pass_acceptance", "overturned", "overturn_rate",
    "kappa_vs_gold", "gold_items", "accuracy_dawid_skene",
)  # fmt: skip


def csv_rows(figures: dict[str, Any]) -> Iterable[list[Any]]:
    """team.csv of a report: a header, then one row per annotator and one per query (`row` says which; "" where a
    figure is undefined or belongs to the other kind), at full precision."""
    yield ["row", "name", *TEAM_COLUMNS]
    for row in figures["annotators"]:
        yield ["annotator", row["annotator"], *("" if row.get(k) is None else row[k] for k in TEAM_COLUMNS)]
    for row in figures["queries"]:
        yield ["query", row["query"], *("" if row.get(k) is None else row[k] for k in TEAM_COLUMNS)]


def benchmark_sentence(figures: dict[str, Any]) -> str:
    """The benchmark's cost and its team's quality in one sentence, for a release's card and croissant.json."""
    overall, people = figures["overall"], figures["annotators"]
    hours = overall["active_seconds"] / 3600
    agreeing = [row["agreement_with_final"] for row in people if row["agreement_with_final"] is not None]
    quality = (
        f"median agreement with the final label {statistics.median(agreeing):.3f} over the annotators with items to "
        f"compare; {sum(row['overturned'] for row in people):,} votes overturned by an adjudicator"
        if agreeing
        else "no image judged twice, so no agreement to report"
    )
    per_label = overall["seconds_per_label"]
    return (
        f"Cost: {hours:,.1f} hours of active labeling (lead times capped at {figures['idle_cap_seconds']:.0f} s) for "
        f"{overall['labels']:,} judgments in {overall['actions']:,} actions"
        + (f", a median {per_label:.1f} s per label" if per_label is not None else "")
        + (f", {overall['labels_per_positive']:.1f} judgments per positive" if overall["labels_per_positive"] else "")
        + f"; {len(people)} annotators, {quality}."
    )
