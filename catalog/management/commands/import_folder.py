from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from catalog.importers import import_folder
from common.cli import input_errors_as_command_errors


class Command(BaseCommand):
    help = (
        "Import every JPEG/PNG image under a folder. An image's taxon comes from its folder's name "
        "when that matches a taxon's iNat image_dir_name or scientific name."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path)
        parser.add_argument(
            "--skip-unreadable", action="store_true", help="leave out unreadable images instead of stopping"
        )

    def handle(self, folder: Path, skip_unreadable: bool, **options: Any) -> None:
        with input_errors_as_command_errors():
            result = import_folder(folder, skip_unreadable=skip_unreadable)
        for name in result.skipped:
            self.stderr.write(f"skipped unreadable image: {name}")
        self.stdout.write(self.style.SUCCESS(f"Imported {folder}: {result}."))
