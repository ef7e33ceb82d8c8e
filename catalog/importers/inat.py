"""Importing an iNat21/iNat24 metadata file (COCO layout), streamed.

The real iNat24 train file describes 4.8M images in about 2 GB of JSON, so it
is never loaded whole: ijson reads one section at a time (the file is read
once per section, because images come before the annotations that give their
taxon), the image -> taxon map is two numpy arrays (77 MB for 4.8M images),
and images are written in batches.

    images:      id, width, height, file_name, license, rights_holder, date,
                 latitude, longitude, location_uncertainty
    categories:  id, name, common_name, supercategory, kingdom, phylum, class,
                 order, family, genus, specific_epithet, image_dir_name
    annotations: image_id, category_id
    licenses:    id, name, url
"""

import gzip
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import ijson
import numpy as np
from django.db import transaction

from common.inputs import InputError
from common.values import (
    INT32,
    BadValue,
    image_file_name,
    optional_date,
    optional_float,
    optional_int,
    optional_text,
    required_int,
    required_text,
)

from ..models import Image, ImageRoot, Taxon
from ..thumbnails import allowed_root
from .writers import UpsertWriter

TAXON_FIELDS = [
    "id",
    "scientific_name",
    "common_name",
    "kingdom",
    "phylum",
    "class_name",
    "order",
    "family",
    "genus",
    "specific_epithet",
    "image_dir_name",
    "supercategory",
]
IMAGE_FIELDS = [
    "id",
    "root",
    "file_name",
    "width",
    "height",
    "taxon",
    "latitude",
    "longitude",
    "location_uncertainty",
    "observed_on",
    "license",
    "rights_holder",
]
# iNat's category keys, in the order of TAXON_FIELDS after id.
CATEGORY_KEYS = [
    "name",
    "common_name",
    "kingdom",
    "phylum",
    "class",
    "order",
    "family",
    "genus",
    "specific_epithet",
    "image_dir_name",
    "supercategory",
]


@dataclass
class InatResult:
    taxa: int
    taxa_written: int
    images: int
    images_written: int

    def __str__(self) -> str:
        return (
            f"{self.images} images ({self.images_written} new or changed, "
            f"{self.images - self.images_written} unchanged), "
            f"{self.taxa} taxa ({self.taxa_written} new or changed)"
        )


# reading(step, bytes read, file bytes): called as the file is read (common.cli.reading_bar draws it).
Reading = Callable[[str, int, int], None]


def import_inat(
    path: Path,
    images_root: Path | None = None,
    *,
    batch_size: int = 50_000,
    progress: Callable[[int, int], None] | None = None,
    reading: Reading | None = None,
) -> InatResult:
    """Import taxa and images from an iNat JSON file (plain or .gz), all or nothing.

    `images_root` is the folder the images' file_name values are relative to.
    `progress(done, total)` is called after each batch of images written.
    `reading(step, bytes_read, file_bytes)` is called as the file is read before that, once per step
    ("checking", "licenses", "taxa", "annotations"): on the 2 GB iNat24 file these take minutes.
    Raises InputError naming the record for any bad value.
    """
    path = Path(path)
    _refuse_missing(path, images_root)
    reading = reading or _quietly
    _prescan(path, reading)
    licenses = {license_id: name for license_id, name in _licenses(path, reading)}
    taxa = list(_taxa(path, reading))
    taxon_ids = np.array(sorted(row[0] for row in taxa), dtype=np.int64)
    annotated_ids, annotated_taxa = _annotations(path, taxon_ids, reading)
    total = len(annotated_ids)

    with transaction.atomic():
        taxa_written = UpsertWriter(Taxon, TAXON_FIELDS).write(taxa)
        root_id = None
        if images_root is not None:
            root_id = ImageRoot.objects.get_or_create(path=str(Path(images_root).resolve()))[0].id
        rows = (
            _image_row(path, index, record, root_id, licenses, annotated_ids, annotated_taxa)
            for index, record in _items(path, "images")
        )
        count, written = _write_images(path, rows, total, batch_size, progress or _quietly_counted)
    return InatResult(taxa=len(taxa), taxa_written=taxa_written, images=count, images_written=written)


def _refuse_missing(path: Path, images_root: Path | None) -> None:
    if not path.is_file():
        raise InputError(path, None, "no such file")
    if images_root is not None and not Path(images_root).is_dir():
        raise InputError(images_root, None, "the images root is not a folder")
    if images_root is not None and not allowed_root(images_root):
        raise InputError(images_root, None, "the images root is not inside QUIRE_IMAGE_ROOTS; add it there first")


def _write_images(
    path: Path, rows: Iterable[tuple[Any, ...]], total: int, batch_size: int, progress: Callable[[int, int], None]
) -> tuple[int, int]:
    """The image rows written in batches (the caller's transaction), every id checked unique at the end: (images
    read, images new or changed)."""
    writer = UpsertWriter(Image, IMAGE_FIELDS)
    seen = np.empty(max(total, 1024), dtype=np.int64)
    count = written = 0
    batch: list[tuple[Any, ...]] = []
    for row in rows:
        if count == len(seen):
            seen = np.resize(seen, 2 * len(seen))
        seen[count] = row[0]
        count += 1
        batch.append(row)
        if len(batch) >= batch_size:
            written += _write_batch(path, writer, batch, seen[:count])
            batch = []
            progress(count, max(total, count))
    written += _write_batch(path, writer, batch, seen[:count])
    progress(count, count)
    _check_unique(path, seen[:count])
    return count, written


def _quietly_counted(done: int, total: int) -> None:
    """No progress shown."""


# iNat's records are at most four levels deep (document, section, record, a bbox list); allow slack
# for brackets inside strings, which the byte scan below counts too.
MAX_NESTING = 64
# iNat's longest text (a rights holder, a file name) is a few hundred bytes, so no stretch of a real file
# goes a megabyte without a quote; a file that does (the audit's 1 GB string on one line) would be parsed
# into memory whole before any check could refuse it.
MAX_VALUE_BYTES = 1 << 20
_LONE_SURROGATE = re.compile(
    rb"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F][0-9a-fA-F]{2})"
    rb"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)


def _quietly(step: str, bytes_read: int, file_bytes: int) -> None:
    """A reading() callback that shows nothing."""


def _prescan(path: Path, reading: Callable[[str, int, int], None] = _quietly, chunk_size: int = 16 << 20) -> None:
    """Refuse, before any parsing, a document nested deeper than MAX_NESTING, holding a value longer
    than MAX_VALUE_BYTES or an unpaired \\ud800-\\udfff escape.

    Why a byte scan and not the JSON parser: ijson keeps each value's full prefix ("images.item.
    item.item..."), so memory grows with the square of the depth (128 KB of nested arrays took
    10 GB); and yajl turns a lone surrogate into "?" without a word. numpy counts brackets at
    about a gigabyte a second, a small cost beside the parse itself.
    """
    depth = 0
    offset = 0
    tail = b""
    last_quote = 0
    file_bytes = path.stat().st_size
    with _open(path) as handle:
        while chunk := handle.read(chunk_size):
            reading("checking", _bytes_read(handle), file_bytes)
            data = np.frombuffer(chunk, dtype=np.uint8)
            last_quote = _check_value_lengths(path, data, offset, last_quote)
            steps = (data == ord("[")).astype(np.int64) + (data == ord("{")) - (data == ord("]")) - (data == ord("}"))
            running = depth + np.cumsum(steps)
            if len(running) and running.max() > MAX_NESTING:
                where = offset + int(np.argmax(running > MAX_NESTING))
                raise InputError(
                    path, f"byte {where}", f"the JSON is nested more than {MAX_NESTING} levels deep; an iNat file is 4"
                )
            depth = int(running[-1]) if len(running) else depth
            window = tail + chunk
            for found in _LONE_SURROGATE.finditer(window):
                if found.start() >= len(window) - 12 and len(chunk) == chunk_size:
                    break  # its pair may start in the next chunk: checked again there, with this tail
                where = offset - len(tail) + found.start()
                raise InputError(
                    path, f"byte {where}", "an unpaired \\ud800-\\udfff escape (a lone surrogate) is not text"
                )
            tail = window[-24:]
            offset += len(chunk)


def _check_value_lengths(path: Path, data: np.ndarray, offset: int, last_quote: int) -> int:
    """Refuse a stretch of more than MAX_VALUE_BYTES without a quote in this chunk (starting `offset`
    bytes into the file; the previous quote was at `last_quote`). Returns the last quote's position."""
    # The distance from each quote, and from the chunk's end, back to the quote before it.
    quotes = offset + np.flatnonzero(data == ord('"'))
    gaps = np.diff(np.append(quotes, offset + len(data)), prepend=last_quote)
    if gaps.max() > MAX_VALUE_BYTES:
        where = int(np.append(last_quote, quotes)[np.argmax(gaps)])
        raise InputError(
            path,
            f"byte {where}",
            f"a value runs over {MAX_VALUE_BYTES >> 20} MB; iNat metadata's longest text is a few hundred bytes",
        )
    return int(quotes[-1]) if len(quotes) else last_quote


def _write_batch(path: Path, writer: UpsertWriter, batch: list[tuple[Any, ...]], seen: np.ndarray) -> int:
    # A repeated id inside one batch would make PostgreSQL's ON CONFLICT fail
    # with an unhelpful message, so catch it first with the record it names.
    ids = np.fromiter((row[0] for row in batch), dtype=np.int64, count=len(batch))
    if len(np.unique(ids)) != len(ids):
        _check_unique(path, seen)
    return writer.write(batch)


def _check_unique(path: Path, ids: np.ndarray) -> None:
    order = np.argsort(ids, kind="stable")
    ordered = ids[order]
    repeats = np.flatnonzero(ordered[1:] == ordered[:-1])
    if len(repeats):
        second = order[repeats[0] + 1]
        raise InputError(path, f"images[{second}]", f"image id {ids[second]} appears twice in the file")


def _open(path: Path) -> BinaryIO | gzip.GzipFile:
    if path.suffix == ".gz":
        return gzip.open(path, "rb")
    return path.open("rb")


def _bytes_read(handle: BinaryIO | gzip.GzipFile) -> int:
    """How far into the file on disk a reader is (for .gz, the compressed bytes, to compare with its size)."""
    on_disk = handle.fileobj if isinstance(handle, gzip.GzipFile) else handle
    return int(on_disk.tell())  # type: ignore[union-attr]  # a GzipFile opened from disk has a seekable fileobj


def _items(
    path: Path, section: str, reading: Callable[[str, int, int], None] | None = None, step: str = ""
) -> Iterator[tuple[int, dict[str, Any]]]:
    """Yield (position, record) for each record of one top-level list of the file."""
    handle = _open(path)
    file_bytes = path.stat().st_size
    try:
        for index, record in enumerate(ijson.items(handle, f"{section}.item", use_float=True)):
            if not isinstance(record, dict):
                raise InputError(path, f"{section}[{index}]", "each record must be a JSON object")
            if reading and index % 10_000 == 0:
                reading(step, _bytes_read(handle), file_bytes)
            yield index, record
        if reading:
            reading(step, file_bytes, file_bytes)
    except ijson.JSONError as error:
        # ijson reads ahead in 64 KB blocks, so the position is that close.
        message = _first_line(error)
        problem = "the file is not UTF-8 text" if "UTF8" in message else f"broken JSON ({message})"
        raise InputError(path, f"near byte {handle.tell()}", problem) from None
    except (OSError, EOFError) as error:  # a truncated or corrupt .gz
        raise InputError(path, f"reading {section}", f"cannot read the file ({_first_line(error)})") from None
    except UnicodeDecodeError:
        raise InputError(path, f"reading {section}", "the file is not UTF-8 JSON") from None
    finally:
        handle.close()


def _first_line(error: Exception) -> str:
    """The first line of a parser's message (yajl's messages are bytes, with a drawing below)."""
    message = error.args[0] if error.args else ""
    if isinstance(message, bytes):
        message = message.decode("utf-8", "replace")
    message = str(message).strip()
    return message.splitlines()[0] if message else type(error).__name__


def _licenses(path: Path, reading: Reading) -> Iterator[tuple[int, str]]:
    for index, record in _items(path, "licenses", reading, "licenses"):
        try:
            yield required_int(record.get("id"), "id"), optional_text(record.get("name"), "name", 255)
        except BadValue as error:
            raise InputError(path, f"licenses[{index}]", str(error)) from None


def _taxa(path: Path, reading: Reading) -> Iterator[tuple[Any, ...]]:
    seen = set()
    for index, record in _items(path, "categories", reading, "taxa"):
        try:
            taxon_id = required_int(record.get("id"), "id", INT32)
            row = (
                taxon_id,
                required_text(record.get("name"), "name", 255),
                *(
                    optional_text(record.get(key), key, 255 if key.endswith("name") else 100)
                    for key in CATEGORY_KEYS[1:]
                ),
            )
        except BadValue as error:
            raise InputError(path, f"categories[{index}]", str(error)) from None
        if taxon_id in seen:
            raise InputError(path, f"categories[{index}]", f"category id {taxon_id} appears twice in the file")
        seen.add(taxon_id)
        yield row


def _annotations(path: Path, taxon_ids: np.ndarray, reading: Reading) -> tuple[np.ndarray, np.ndarray]:
    """Return (image ids sorted, their taxon ids): the map images are looked up in."""
    image_ids, category_ids = [], []
    for index, record in _items(path, "annotations", reading, "annotations"):
        try:
            image_id = required_int(record.get("image_id"), "image_id")
            category_id = required_int(record.get("category_id"), "category_id", INT32)
        except BadValue as error:
            raise InputError(path, f"annotations[{index}]", str(error)) from None
        position = np.searchsorted(taxon_ids, category_id)
        if position == len(taxon_ids) or taxon_ids[position] != category_id:
            raise InputError(
                path, f"annotations[{index}]", f"category_id {category_id} is not in the file's categories"
            )
        image_ids.append(image_id)
        category_ids.append(category_id)
    images = np.array(image_ids, dtype=np.int64)
    categories = np.array(category_ids, dtype=np.int64)
    order = np.argsort(images, kind="stable")
    images, categories = images[order], categories[order]
    repeats = np.flatnonzero((images[1:] == images[:-1]) & (categories[1:] != categories[:-1]))
    if len(repeats):
        raise InputError(
            path, "annotations", f"image_id {images[repeats[0]]} is annotated with two different categories"
        )
    return images, categories


def _image_row(
    path: Path,
    index: int,
    record: dict[str, Any],
    root_id: int | None,
    licenses: dict[int, str],
    annotated_ids: np.ndarray,
    annotated_taxa: np.ndarray,
) -> tuple[Any, ...]:
    try:
        image_id = required_int(record.get("id"), "id")
        license_id = optional_int(record.get("license"), "license")
        if license_id is not None and license_id not in licenses:
            raise BadValue(f"license {license_id} is not in the file's licenses")
        position = np.searchsorted(annotated_ids, image_id)
        taxon_id = None
        if position < len(annotated_ids) and annotated_ids[position] == image_id:
            taxon_id = int(annotated_taxa[position])
        return (
            image_id,
            root_id,
            image_file_name(record.get("file_name"), "file_name"),
            _size(record.get("width"), "width"),
            _size(record.get("height"), "height"),
            taxon_id,
            optional_float(record.get("latitude"), "latitude", low=-90, high=90),
            optional_float(record.get("longitude"), "longitude", low=-180, high=180),
            optional_float(record.get("location_uncertainty"), "location_uncertainty", low=0),
            optional_date(record.get("date"), "date"),
            "" if license_id is None else licenses.get(license_id, ""),
            optional_text(record.get("rights_holder"), "rights_holder", 255),
        )
    except BadValue as error:
        raise InputError(path, f"images[{index}]", str(error)) from None


def _size(value: Any, field: str) -> int | None:
    result = optional_int(value, field)
    if result is not None and not 0 < result < 1_000_000:
        raise BadValue(f"{field} must be a positive number of pixels, not {value!r}")
    return result
