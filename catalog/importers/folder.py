"""Importing any folder of JPEG/PNG images.

Each image's taxon comes from the name of the folder it sits in, when that
matches a known taxon's iNat image_dir_name or scientific name
(e.g. "03111_Animalia_Chordata_Aves_Charadriiformes_Laridae_Rynchops_niger",
"Rynchops niger" or "Rynchops_niger"). Images get new ids after the largest
id in the collection; a file already imported from the same root keeps its id.
"""

import os
from dataclasses import dataclass, field
from pathlib import Path

import PIL.Image
from django.db import transaction
from django.db.models import Max

from common.formats import IMAGE_EXTENSIONS, RASTER_TYPES
from common.inputs import InputError
from common.values import BadValue

from ..models import ROWS_PER_STATEMENT, Image, ImageRoot, Taxon
from ..thumbnails import allowed_root


@dataclass
class FolderResult:
    found: int
    created: int
    with_taxon: int
    skipped: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        text = (
            f"{self.found} images found, {self.created} added ({self.with_taxon} of them with a taxon), "
            f"{self.found - self.created - len(self.skipped)} already there"
        )
        if self.skipped:
            text += f", {len(self.skipped)} unreadable skipped"
        return text


def image_files(folder: Path) -> list[Path]:
    """Every JPEG/PNG under `folder`, relative to it, in a stable order."""
    found = []
    for directory, subdirectories, files in os.walk(folder):
        subdirectories.sort()
        for name in sorted(files):
            if name.lower().endswith(IMAGE_EXTENSIONS) and not name.startswith("."):
                found.append(Path(directory, name).relative_to(folder))
    return found


def _image_size(path: Path, file_name: str) -> tuple[int, int]:
    """(width, height) of a regular file Pillow decodes as JPEG, PNG, WebP or GIF; BadValue says why not."""
    try:
        file_name.encode("utf-8")
    except UnicodeEncodeError:  # os.walk hands over undecodable bytes as surrogates
        raise BadValue("the file name is not UTF-8; rename the file") from None
    if len(file_name) > 1024:
        raise BadValue(f"the path is {len(file_name):,} characters long, more than 1,024; move the file up")
    if not path.is_file():  # a FIFO or a device named x.jpg would block the read forever
        raise BadValue("not a regular file")
    try:
        with PIL.Image.open(path, formats=list(RASTER_TYPES)) as picture:
            return picture.size
    except (OSError, ValueError, PIL.Image.DecompressionBombError) as error:
        raise BadValue(f"not a readable JPEG, PNG, WebP or GIF image ({error})") from None


def _printable(text: str | Path) -> str:
    """A path as it can be printed: undecodable bytes shown as escapes."""
    return str(text).encode("utf-8", "backslashreplace").decode("utf-8")


def taxon_lookup() -> dict[str, int]:
    """Folder name -> taxon id, by iNat image_dir_name and by scientific name (spaces or underscores)."""
    lookup: dict[str, int] = {}
    for taxon_id, scientific_name, dir_name in Taxon.objects.values_list("id", "scientific_name", "image_dir_name"):
        lookup.setdefault(scientific_name.lower(), taxon_id)
        lookup.setdefault(scientific_name.lower().replace(" ", "_"), taxon_id)
        if dir_name:
            lookup[dir_name.lower()] = taxon_id
    return lookup


def import_folder(folder: Path, *, skip_unreadable: bool = False) -> FolderResult:
    """Add every JPEG/PNG under `folder` to the collection, all or nothing.

    An unreadable image stops the import with its name, unless
    `skip_unreadable`, which leaves it out and lists it in the result.
    """
    folder = Path(folder).resolve()
    if not folder.is_dir():
        raise InputError(folder, None, "no such folder")
    if not allowed_root(folder):
        raise InputError(folder, None, "the folder is not inside QUIRE_IMAGE_ROOTS; add it there first")
    files = image_files(folder)
    taxa = taxon_lookup()
    skipped: list[str] = []
    with transaction.atomic():
        root, _ = ImageRoot.objects.get_or_create(path=str(folder))
        known = set(Image.objects.filter(root=root).values_list("file_name", flat=True))
        next_id = (Image.objects.aggregate(largest=Max("id"))["largest"] or 0) + 1
        new_images = []
        for relative in files:
            file_name = relative.as_posix()
            if file_name in known:
                continue
            try:
                width, height = _image_size(folder / relative, file_name)
            except BadValue as error:
                if not skip_unreadable:
                    raise InputError(
                        _printable(folder / relative), None, f"{error}; fix or remove it, or pass --skip-unreadable"
                    ) from None
                skipped.append(_printable(file_name))
                continue
            taxon_id = taxa.get(relative.parent.name.lower()) if relative.parent.name else None
            new_images.append(
                Image(id=next_id, root=root, file_name=file_name, width=width, height=height, taxon_id=taxon_id)
            )
            next_id += 1
        Image.objects.bulk_create(new_images, batch_size=ROWS_PER_STATEMENT)
    return FolderResult(
        found=len(files),
        created=len(new_images),
        with_taxon=sum(image.taxon_id is not None for image in new_images),
        skipped=skipped,
    )
