from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotator.inquire.importers import import_queries
from annotator.models import Query
from common.cli import input_errors_as_command_errors


class Command(BaseCommand):
    help = (
        "Import the queries of a released INQUIRE queries CSV "
        "(,query_id,query_text,supercategory,category,iconic_group)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("csv_file", type=Path)
        parser.add_argument(
            "--split",
            choices=Query.Split.values,
            help="default: from the file name (inquire_queries_val.csv -> val), else other",
        )

    def handle(self, csv_file: Path, split: str | None, **options: Any) -> None:
        with input_errors_as_command_errors():
            result = import_queries(csv_file, split=split)
        self.stdout.write(self.style.SUCCESS(f"Imported {csv_file}: {result}."))
