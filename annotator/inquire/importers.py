"""Importing the released INQUIRE files: the queries CSV and the annotations CSV.

queries:      ,query_id,query_text,supercategory,category,iconic_group
              (the first, unnamed column is a pandas index; it is kept for export)
annotations:  query_id,image_id,image_path  (one row per relevant pair)
"""

from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from typing import Any

from django.contrib.auth.models import User
from django.core.management.color import no_style
from django.db import connection, transaction
from django.db.models import Model

from annotator.labels import set_labels_in_bulk
from annotator.models import ImportBatch, LabelSource, LabelValue, Query, text_key
from catalog.models import ROWS_PER_STATEMENT, Image, Taxon
from common.inputs import InputError, read_csv
from common.values import (
    INT32,
    BadValue,
    image_file_name,
    optional_int,
    optional_text,
    required_int,
    required_text,
)

QUERY_COLUMNS = ["query_id", "query_text", "supercategory", "category", "iconic_group"]
ANNOTATION_COLUMNS = ["query_id", "image_id", "image_path"]


@dataclass
class QueriesResult:
    created: int
    updated: int
    unchanged: int

    def __str__(self) -> str:
        return f"{self.created} queries created, {self.updated} updated, {self.unchanged} unchanged"


@dataclass
class AnnotationsResult:
    rows: int
    labels_changed: int
    images_created: int

    def __str__(self) -> str:
        text = f"{self.rows} relevant pairs read, {self.labels_changed} labels set or changed"
        if self.images_created:
            text += f", {self.images_created} images added to the collection"
        return text


def split_from_file_name(path: Path) -> str:
    """The released files are named inquire_queries_val.csv and inquire_queries_test.csv."""
    stem = Path(path).stem.lower()
    for split in (Query.Split.VAL, Query.Split.TEST):
        if stem.endswith(f"_{split}") or f"_{split}_" in stem:
            return split
    return Query.Split.OTHER


def import_queries(path: Path, split: str | None = None) -> QueriesResult:
    """Create or update the queries of an INQUIRE queries CSV, all or nothing.

    Fields an admin owns (status, fully labeled, notes) are never touched.
    The split comes from `split`, else from the file name, else "other".
    """
    path = Path(path)
    if split is not None and split not in Query.Split.values:
        raise InputError(path, None, f"split must be one of {', '.join(Query.Split.values)}, not {split!r}")
    parsed, keys = _read_queries(path, split or split_from_file_name(path))
    with transaction.atomic():
        created, updated = _store_queries(path, parsed, keys)
    return QueriesResult(created=created, updated=updated, unchanged=len(parsed) - created - updated)


def _read_queries(path: Path, split: str) -> tuple[dict[int, dict[str, Any]], dict[str, int]]:
    """The file's queries, {id: fields}, and {text key: id}; InputError at the first bad row or duplicate."""
    parsed: dict[int, dict[str, Any]] = {}
    keys: dict[str, int] = {}  # text_key -> query id, for the file's own duplicates
    for line, row in read_csv(path, QUERY_COLUMNS):
        try:
            query_id, fields = _query_row(row, split)
        except BadValue as error:
            raise InputError(path, line, str(error)) from None
        if query_id in parsed:
            raise InputError(path, line, f"query_id {query_id} appears twice in the file")
        key = text_key(fields["text"])
        if key in keys:
            raise InputError(path, line, f"query {query_id} has the text of query {keys[key]} above: one query a text")
        parsed[query_id], keys[key] = fields, query_id
    return parsed, keys


def _query_row(row: dict[str, Any], split: str) -> tuple[int, dict[str, Any]]:
    """One row of the queries CSV as (query id, the fields Quire stores); BadValue names what is wrong."""
    query_id = required_int(row["query_id"], "query_id")
    if query_id <= 0:
        raise BadValue(f"query_id must be a positive whole number, not {query_id}")
    return query_id, {
        "text": required_text(row["query_text"], "query_text", 10_000),
        "supercategory": optional_text(row["supercategory"], "supercategory", 100),
        "category": optional_text(row["category"], "category", 255),
        "iconic_group": optional_text(row["iconic_group"], "iconic_group", 100),
        "split": split,
        "csv_index": optional_int(row.get(""), "the unnamed first column", INT32),
    }


def _store_queries(path: Path, parsed: dict[int, dict[str, Any]], keys: dict[str, int]) -> tuple[int, int]:
    """Create the new queries and update the changed ones (inside the caller's transaction); (created, updated).
    A text another stored query already has is refused with InputError."""
    created = updated = 0
    existing = Query.objects.select_for_update().in_bulk(list(parsed))
    taken = Query.objects.filter(text_key__in=list(keys)).exclude(pk__in=list(parsed))
    if clash := taken.values_list("pk", "text_key").first():
        raise InputError(path, None, f"query {keys[clash[1] or '']} has the text of query {clash[0]}, already stored")
    for query_id, fields in parsed.items():
        query = existing.get(query_id)
        if query is None:
            Query.objects.create(id=query_id, **fields)
            created += 1
        elif any(getattr(query, name) != value for name, value in fields.items()):
            for name, value in fields.items():
                setattr(query, name, value)
            query.save(update_fields=[*fields, "updated_at"])
            updated += 1
    if created:
        reset_id_sequence(Query)
    return created, updated


def reset_id_sequence(model: type[Model]) -> None:
    """After inserting explicit ids, move PostgreSQL's id sequence past them (a no-op on SQLite)."""
    statements = connection.ops.sequence_reset_sql(no_style(), [model])
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def import_annotations(
    path: Path, *, create_missing_images: bool = False, user: User | None = None
) -> AnnotationsResult:
    """Mark each (query, image) pair of an INQUIRE annotations CSV relevant, all or nothing.

    The import is recorded as an ImportBatch (file, user, counts) that every label event it
    writes points to.

    Every query must exist (import the queries file first). Every image must
    exist in the collection, unless `create_missing_images`, which adds the
    missing ones from their image_path (taxon from the folder name) so that
    the released INQUIRE files can be used without the iNat24 metadata.
    """
    path = Path(path)
    pairs: list[tuple[int, int]] = []
    paths: dict[int, tuple[str, int]] = {}  # image id -> (image_path, first line)
    first_line_of_query: dict[int, int] = {}
    for line, row in read_csv(path, ANNOTATION_COLUMNS):
        try:
            query_id = required_int(row["query_id"], "query_id")
            image_id = required_int(row["image_id"], "image_id")
            image_path = image_file_name(row["image_path"], "image_path")
        except BadValue as error:
            raise InputError(path, line, str(error)) from None
        if image_id in paths and paths[image_id][0] != image_path:
            raise InputError(
                path,
                line,
                f"image {image_id} has image_path {image_path!r} here but {paths[image_id][0]!r} "
                f"on line {paths[image_id][1]}",
            )
        paths.setdefault(image_id, (image_path, line))
        first_line_of_query.setdefault(query_id, line)
        pairs.append((query_id, image_id))

    known_queries = set(Query.objects.filter(id__in=list(first_line_of_query)).values_list("id", flat=True))
    for query_id, line in sorted(first_line_of_query.items(), key=lambda item: item[1]):
        if query_id not in known_queries:
            raise InputError(path, line, f"unknown query_id {query_id}; import the queries CSV that defines it first")

    with transaction.atomic():
        missing = _check_images(path, paths)
        if missing and not create_missing_images:
            image_id = min(missing, key=lambda i: paths[i][1])
            raise InputError(
                path,
                paths[image_id][1],
                f"unknown image_id {image_id} (and {len(missing) - 1} more); import the collection first, "
                "or pass --create-missing-images to add them from image_path",
            )
        if missing:
            _create_images({image_id: paths[image_id][0] for image_id in missing})
        batch = ImportBatch.objects.create(file_name=str(path), kind="inquire_annotations", user=user, rows=len(pairs))
        changed = set_labels_in_bulk(pairs, value=LabelValue.RELEVANT, source=LabelSource.IMPORT, import_batch=batch)
        if changed:
            batch.labels_changed = changed
            batch.save(update_fields=["labels_changed"])
        else:  # a re-import that changes nothing leaves no trace, as it wrote no event
            batch.delete()
    return AnnotationsResult(rows=len(pairs), labels_changed=changed, images_created=len(missing))


def _check_images(path: Path, paths: dict[int, tuple[str, int]]) -> set[int]:
    """Return the ids not in the collection; fail on an image whose stored path is a different file."""
    ids = list(paths)
    stored: dict[int, str] = {}
    for start in range(0, len(ids), ROWS_PER_STATEMENT):
        stored.update(
            Image.objects.filter(id__in=ids[start : start + ROWS_PER_STATEMENT]).values_list("id", "file_name")
        )
    for image_id, file_name in stored.items():
        image_path, line = paths[image_id]
        # The collection may have been imported from one folder up or down,
        # so one path only has to end with the other.
        if not (file_name.endswith(image_path) or image_path.endswith(file_name)):
            raise InputError(
                path,
                line,
                f"image {image_id} is {file_name!r} in the collection but {image_path!r} here; "
                "is this file for another collection?",
            )
    return set(ids) - set(stored)


def _create_images(paths: dict[int, str]) -> None:
    taxa = dict(Taxon.objects.exclude(image_dir_name="").values_list("image_dir_name", "id"))
    images = []
    for image_id, image_path in sorted(paths.items()):
        folder = PurePosixPath(image_path).parent.name
        images.append(Image(id=image_id, file_name=image_path, taxon_id=taxa.get(folder)))
    Image.objects.bulk_create(images, batch_size=ROWS_PER_STATEMENT)
