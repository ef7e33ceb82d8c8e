import datetime
import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from annotator.models import Query
from annotator.team import costs


class Command(BaseCommand):
    help = (
        "What the benchmark cost and how good each annotator is: per annotator and per query, labels and actions "
        "(a range or a Submit is one action), active time (lead times capped at QUIRE_IDLE_CAP_SECONDS), seconds "
        "per label, labels per positive, and each annotator's agreement with the final labels, first-pass "
        "acceptance, votes overturned, kappa against adjudicated gold and Dawid-Skene accuracy."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        parser.add_argument("--since", metavar="DATE", help="time figures from this day on (YYYY-MM-DD)")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON (null where undefined)")

    def handle(self, query_ids: list[int] | None, since: str | None, **options: Any) -> None:
        if query_ids:
            known = set(Query.objects.filter(id__in=query_ids).values_list("id", flat=True))
            if unknown := sorted(set(query_ids) - known):
                raise CommandError(f"unknown query id(s) {', '.join(map(str, unknown))}")
        start = _day(since) if since else None
        figures = costs.report(query_ids, since=start)
        self.stdout.write(json.dumps(figures, indent=2) if options["json"] else _tables(figures))


def _day(text: str) -> datetime.datetime:
    try:
        day = datetime.date.fromisoformat(text)
    except ValueError:
        raise CommandError(f"--since is a day such as 2026-11-01, not {text[:40]!r}.") from None
    return timezone.make_aware(datetime.datetime.combine(day, datetime.time()))


def _tables(figures: dict[str, Any]) -> str:
    def show(value: Any, digits: int = 2) -> str:
        return "—" if value is None else f"{value:.{digits}f}"

    cap = figures["idle_cap_seconds"]
    lines = [
        f"Annotators (a lead time over {cap:.0f} s counts as {cap:.0f} s)",
        f"{'annotator':<16} {'labels':>7} {'actions':>7} {'active':>9} {'s/label':>7} {'labels/pos':>10} "
        f"{'agree':>6} {'kept':>6} {'overturned':>10} {'kappa':>6} {'DS acc':>6} {'items':>6}",
    ]
    for row in figures["annotators"]:
        lines.append(
            f"{row['annotator'][:16]:<16} {row['labels']:>7,} {row['actions']:>7,} "
            f"{costs.duration(row['active_seconds']):>9} "
            f"{show(row['seconds_per_label'], 1):>7} {show(row['labels_per_positive'], 1):>10} "
            f"{show(row['agreement_with_final'], 3):>6} {show(row['first_pass_acceptance'], 3):>6} "
            f"{row['overturned']:>10,} {show(row['kappa_vs_gold'], 3):>6} {show(row['accuracy_dawid_skene'], 3):>6} "
            f"{row['items']:>6,}"
        )
    lines += ["", "Queries", f"{'query':>8} {'labels':>7} {'actions':>7} {'active':>9} {'s/label':>7} "
              f"{'positives':>9} {'labels/pos':>10}"]  # fmt: skip
    for row in figures["queries"]:
        lines.append(
            f"{row['query']:>8} {row['labels']:>7,} {row['actions']:>7,} {costs.duration(row['active_seconds']):>9} "
            f"{show(row['seconds_per_label'], 1):>7} {row['positives']:>9,} {show(row['labels_per_positive'], 1):>10}"
        )
    return "\n".join(lines)
