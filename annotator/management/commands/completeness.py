import json
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.completeness import check_requests, checks, claims
from annotator.completeness.check_requests import DEFAULT_DEPTH
from annotator.completeness.frames import KINDS, BadCheck
from annotator.models import Query


class Command(BaseCommand):
    help = (
        "Each query's completeness claim: recall at least a target with a stated confidence over a frame, from a "
        "random check of the frame's unlabeled images (or what the open check still waits for). With --draw, draw "
        "a check of the --query given, as the side pane and the API do."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        parser.add_argument("--json", action="store_true", help="print one JSON record per query (a list)")
        parser.add_argument("--draw", action="store_true", help="draw a check of the one --query given")
        parser.add_argument("--target", type=float, default=0.9, help="--draw: the recall to certify (0.9)")
        parser.add_argument("--confidence", type=float, default=0.95, help="--draw: its confidence (0.95)")
        parser.add_argument(
            "--frame", choices=KINDS, help="--draw: declare a frame of this kind (default: the query's frame, frozen)"
        )
        parser.add_argument("--depth", type=int, default=DEFAULT_DEPTH, help="--draw, top: ranks per ranking")
        parser.add_argument("--taxon", action="append", default=[], help="--draw, taxa: a taxon (repeatable)")
        parser.add_argument(
            "--single-judgments", action="store_true", help="--draw: trust single judgments (a team of one)"
        )
        parser.add_argument(
            "--with-unconfirmed",
            action="store_true",
            help="--draw: draw although positives of the frame wait for confirmation (sampled as missing)",
        )

    def handle(self, query_ids: list[int] | None, **options: Any) -> None:
        queries = Query.objects.order_by("pk")
        if query_ids:
            queries = queries.filter(pk__in=query_ids)
            if unknown := sorted(set(query_ids) - set(queries.values_list("pk", flat=True))):
                raise CommandError(f"unknown query id(s) {', '.join(map(str, unknown))}")
        if options["draw"]:
            if len(query_ids or []) != 1:
                raise CommandError("--draw draws a check of one query: give exactly one --query.")
            self._draw(queries.get(), options)
        records = [claims.report(query) for query in queries]
        self.stdout.write(json.dumps(records, indent=2) if options["json"] else _table(records))

    def _draw(self, query: Query, options: dict[str, Any]) -> None:
        asking: dict[str, Any] = {
            "target_recall": options["target"],
            "confidence": options["confidence"],
            "second_judgments": not options["single_judgments"],
            "with_unconfirmed": options["with_unconfirmed"],
        }
        if options["frame"]:
            asking["frame"] = {"kind": options["frame"], "depth": options["depth"], "taxa": options["taxon"]}
        try:
            asked = check_requests.read_request(asking)
            check, drawn = checks.draw(query, asked, None)
        except BadCheck as bad:
            raise CommandError(str(bad)) from None
        said = "Drew" if drawn else "Query already has an open check:"
        self.stderr.write(f"{said} check {check.ordinal} of query {query.pk}: {check.images.count()} images to label.")


def _table(records: list[dict[str, Any]]) -> str:
    lines = [f"{'query':>6}  {'status':<13} {'frame':<22} {'target':>6} {'conf.':>5} {'bound':>6}  sample     next"]
    for record in records:
        frame = record["frame"]
        where = "" if frame is None else f"{frame['kind']} {frame['depth'] or ''} ({frame['size']})".replace("  ", " ")
        sample = record["sample"]
        progress = "" if sample is None else f"{sample['labeled']}/{sample['size']}"
        bound = record["recall_lower_bound"]
        lines.append(
            f"{record['query_id']:>6}  {record['status']:<13} {where:<22} {_share(record['target_recall']):>6} "
            f"{_share(record['confidence']):>5} {'' if bound is None else f'{bound:.3f}':>6}  {progress:<10} "
            f"{record['next']}"
        )
    return "\n".join(lines)


def _share(value: float | None) -> str:
    return "" if value is None else f"{value:.0%}"
