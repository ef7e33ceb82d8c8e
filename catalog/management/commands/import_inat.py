from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from catalog.importers import import_inat
from common.cli import input_errors_as_command_errors, progress_bar, reading_bar


class Command(BaseCommand):
    help = "Import taxa and images from an iNat21/iNat24 metadata JSON file (COCO layout, plain or .gz)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("json_file", type=Path, help="e.g. train.json or train.json.gz")
        parser.add_argument("--images-root", type=Path, help="folder the images' file_name values are relative to")
        parser.add_argument("--batch-size", type=int, default=50_000, help="images written per batch")

    def handle(self, json_file: Path, images_root: Path | None, batch_size: int, **options: Any) -> None:
        with input_errors_as_command_errors(), reading_bar() as reading, progress_bar("images", "img") as progress:
            result = import_inat(json_file, images_root, batch_size=batch_size, progress=progress, reading=reading)
        self.stdout.write(self.style.SUCCESS(f"Imported {json_file}: {result}."))
