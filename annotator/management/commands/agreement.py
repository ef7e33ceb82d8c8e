import json
from collections.abc import Sequence
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.models import Query
from annotator.team.agreement import RESAMPLES, UNSURE_RULE, report
from common.cli import progress_bar


class Command(BaseCommand):
    help = (
        "How far annotators agree: percent agreement, Cohen's kappa (two annotators) and Krippendorff's alpha "
        "per query and overall, with the items behind each figure and bootstrap intervals; each annotator's "
        "agreement with the final labels. " + UNSURE_RULE
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        parser.add_argument("--json", action="store_true", help="print the figures as JSON (null where undefined)")
        parser.add_argument(
            "--resamples", type=int, default=RESAMPLES, help=f"bootstrap resamples (default {RESAMPLES}; 0: none)"
        )
        parser.add_argument(
            "--dawid-skene",
            action="store_true",
            help="add crowd-kit's Dawid-Skene estimate of each annotator's accuracy",
        )

    def handle(self, query_ids: list[int] | None, resamples: int, dawid_skene: bool, **options: Any) -> None:
        if not 0 <= resamples <= 100_000:
            raise CommandError(f"--resamples must be 0 to 100000, not {resamples}.")
        if query_ids:
            known = set(Query.objects.filter(id__in=query_ids).values_list("id", flat=True))
            if unknown := sorted(set(query_ids) - known):
                raise CommandError(f"unknown query id(s) {', '.join(map(str, unknown))}")
        with progress_bar("agreement", "queries") as progress:
            figures = report(query_ids, resamples=resamples, dawid_skene_accuracy=dawid_skene, progress=progress)
        self.stdout.write(json.dumps(figures, indent=2) if options["json"] else _table(figures))


def span_of(interval: Sequence[float] | None) -> str:
    return "" if interval is None else f"{interval[0]:.3f} to {interval[1]:.3f}"


def _table(figures: dict[str, Any]) -> str:
    def show(value: Any) -> str:
        return "—" if value is None else f"{value:.3f}"

    overall = figures["overall"]
    lines = [
        f"overall: {overall['items']} items, agreement {show(overall['percent_agreement'])}, "
        f"alpha {show(overall['krippendorff_alpha'])} {span_of(overall['krippendorff_alpha_interval'])}",
        "",
        f"{'query':>8} {'items':>6} {'agree':>6} {'kappa':>6} {'alpha':>6}  alpha 95%",
    ]
    for query_id, row in figures["queries"].items():
        span = span_of(row["krippendorff_alpha_interval"])
        lines.append(
            f"{query_id:>8} {row['items']:>6} {show(row['percent_agreement']):>6} {show(row['cohen_kappa']):>6} "
            f"{show(row['krippendorff_alpha']):>6}  {span}"
        )
    lines += ["", f"{'annotator':<20} {'items':>6} {'agrees with final':>18}"]
    for name, row in figures["annotators"].items():
        accuracy = f"  Dawid-Skene accuracy {row['dawid_skene_accuracy']:.3f}" if "dawid_skene_accuracy" in row else ""
        lines.append(f"{name:<20} {row['items']:>6} {show(row['agreement_with_final']):>18}{accuracy}")
    lines += ["", figures["unsure"]]
    return "\n".join(lines)
