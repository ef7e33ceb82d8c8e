from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from annotator.inquire.importers import import_annotations
from common.cli import input_errors_as_command_errors


class Command(BaseCommand):
    help = (
        "Import a released INQUIRE annotations CSV (query_id,image_id,image_path): each row becomes a relevant label."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("csv_file", type=Path)
        parser.add_argument(
            "--create-missing-images",
            action="store_true",
            help="add images the collection lacks from their image_path instead of stopping",
        )

    def handle(self, csv_file: Path, create_missing_images: bool, **options: Any) -> None:
        with input_errors_as_command_errors():
            result = import_annotations(csv_file, create_missing_images=create_missing_images)
        self.stdout.write(self.style.SUCCESS(f"Imported {csv_file}: {result}."))
