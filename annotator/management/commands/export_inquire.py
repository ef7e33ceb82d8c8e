from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.inquire.exporters import AGREEMENT_FILE, COMPLETENESS_FILE, export_inquire
from annotator.models import Query


class Command(BaseCommand):
    help = (
        "Write inquire_queries.csv, inquire_annotations.csv and inquire_labels.csv (the final labels), "
        "inquire_judgments.csv (every annotator's) and agreement.json into a folder."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("out_dir", type=Path)
        parser.add_argument("--query", type=int, action="append", dest="query_ids", help="only this query (repeatable)")
        parser.add_argument(
            "--spreadsheet-safe",
            action="store_true",
            help="prefix cells a spreadsheet would run as formulas (= + - @) with an apostrophe; "
            "the default files stay byte-compatible with INQUIRE's code",
        )

    def handle(self, out_dir: Path, query_ids: list[int] | None, spreadsheet_safe: bool, **options: Any) -> None:
        if out_dir.exists() and not out_dir.is_dir():
            raise CommandError(f"{out_dir}: exists and is not a folder; name a folder to write the CSVs into")
        if query_ids:
            unknown = sorted(set(query_ids) - set(Query.objects.filter(id__in=query_ids).values_list("id", flat=True)))
            if unknown:
                raise CommandError(f"unknown query id(s) {', '.join(map(str, unknown))}")
        counts = export_inquire(out_dir, query_ids, for_spreadsheets=spreadsheet_safe)
        for name, rows in counts.items():
            self.stdout.write(f"{out_dir / name}: {rows} rows")
        self.stdout.write(f"{out_dir / AGREEMENT_FILE}: the agreement figures")
        self.stdout.write(f"{out_dir / COMPLETENESS_FILE}: each query's completeness claim")
