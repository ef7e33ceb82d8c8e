from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from common.cli import input_errors_as_command_errors, progress_bar
from search import jobs
from search.importers import import_clip_retrieval
from search.spec import configured_spec, store_root


class Command(BaseCommand):
    help = (
        "Import precomputed embeddings in the clip-retrieval layout "
        "(img_emb/img_emb_N.npy + metadata/metadata_N.parquet "
        "with an image_path column), e.g. INQUIRE's iNat24 ViT-H/14 embeddings, then build the index."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("folder", type=Path)
        parser.add_argument(
            "--model", help="the model the vectors come from (default: the configured one, %(default)s)"
        )
        parser.add_argument("--no-index", action="store_true", help="do not build the index afterwards")

    def handle(self, folder: Path, model: str | None, no_index: bool, **options: Any) -> None:
        model_name = model or configured_spec().name
        with input_errors_as_command_errors(), progress_bar("vectors", "vec") as progress:
            result = import_clip_retrieval(folder, store_root(), model_name, progress=progress)
        self.stdout.write(self.style.SUCCESS(f"Imported {result} as {model_name}."))
        if not no_index:
            build = jobs.start_index_build(model_name)
            self.stdout.write(f"Index build {build.pk}: {build.get_status_display().lower()}.")
