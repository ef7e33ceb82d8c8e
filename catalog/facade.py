"""The collection's one public door. Code outside catalog/ imports from here, or catalog.models.

    from catalog.facade import NotServable, original_file, species_for_all

Importing it is cheap: the importers (ijson) load on the first import_inat.
"""

from pathlib import Path
from typing import TYPE_CHECKING, Any

from .taxa import UnknownTaxon, describe, species_for, species_for_all
from .thumbnails import NotServable, contained_path, original_file

if TYPE_CHECKING:
    from .importers.inat import InatResult

__all__ = [
    "NotServable",
    "UnknownTaxon",
    "contained_path",
    "describe",
    "import_inat",
    "original_file",
    "species_for",
    "species_for_all",
]


def import_inat(path: Path, images_root: Path | None = None, **options: Any) -> "InatResult":
    """Import an iNat metadata file: catalog.importers.import_inat, whose docstring says the rest."""
    from .importers import import_inat as run  # ijson and the importers: only for an import (this door is cheap)

    return run(path, images_root, **options)
