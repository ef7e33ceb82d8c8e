from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from annotator.demo import write_collection
from search.facade import write_random_model


class Command(BaseCommand):
    help = (
        "Write sample data for trying a deployment with no real data or weights: FOLDER/inat.json and "
        "FOLDER/images/ (a generated collection in iNat's format, for import_inat) and FOLDER/random-clip/ "
        "(a tiny random-weight CLIP model: rankings mean nothing). Imports nothing."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path)
        parser.add_argument("--images", type=int, default=200, help="how many images to draw (default 200)")
        parser.add_argument("--seed", type=int, default=7)

    def handle(self, folder: Path, images: int, seed: int, **options: Any) -> None:
        if not 1 <= images <= 1_000_000:
            raise CommandError("--images must be between 1 and 1,000,000.")
        if (folder / "inat.json").exists():
            raise CommandError(f"{folder / 'inat.json'} exists already; choose another folder or delete it.")
        write_collection(folder / "images", folder / "inat.json", images, seed)
        pretrained = write_random_model(folder / "random-clip")
        self.stdout.write(
            self.style.SUCCESS(f"Wrote {images} images and {folder / 'inat.json'}; the model is {pretrained}.")
        )
        self.stdout.write(
            f"Next: manage.py import_inat {folder / 'inat.json'} --images-root {folder / 'images'}, and set "
            f"QUIRE_CLIP_PRETRAINED={pretrained} for every container."
        )
