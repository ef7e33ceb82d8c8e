"""A release's files beyond the INQUIRE CSVs: TREC qrels, Parquet tables of the same rows (and of the images), and
SHA256SUMS.

qrels.txt is TREC's format, `query_id 0 image_id grade`, one line per final label, judged negatives included so
that a metric can tell "judged not relevant" from "never judged": grade 1 for relevant, 0 for not relevant, unsure
and undecided (an undecided label is not relevant in inquire_annotations.csv too). Sorted by query, then image.
"""

import hashlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from annotator.models import Judgment, Label, LabelValue, Query
from catalog.models import ROWS_PER_STATEMENT, Image

QRELS = "qrels.txt"
PARQUET_ROWS = 100_000  # rows per Parquet row group, written as they are read


def grade(value: str) -> int:
    return 1 if value == LabelValue.RELEVANT else 0


def _labels(query_ids: list[int]) -> Iterator[tuple[Any, ...]]:
    fields = ("query_id", "image_id", "value", "image__file_name", "image__license", "image__rights_holder")
    rows = Label.objects.filter(query_id__in=query_ids).exclude(value="").order_by("query_id", "image_id")
    return rows.values_list(*fields).iterator(ROWS_PER_STATEMENT)


def write_qrels(path: Path, query_ids: list[int]) -> dict[str, int]:
    lines = 0
    with path.open("w", encoding="ascii", newline="\n") as handle:
        for query_id, image_id, value, *_ in _labels(query_ids):
            handle.write(f"{query_id} 0 {image_id} {grade(value)}\n")
            lines += 1
    return {path.name: lines}


QUERY_SCHEMA = pa.schema(
    [("query_id", pa.int64()), ("query_text", pa.string()), ("supercategory", pa.string()),
     ("category", pa.string()), ("iconic_group", pa.string()), ("split", pa.string())]
)  # fmt: skip
QREL_SCHEMA = pa.schema(
    [("query_id", pa.int64()), ("image_id", pa.int64()), ("relevance", pa.int8()), ("label", pa.string()),
     ("image_path", pa.string()), ("license", pa.string()), ("rights_holder", pa.string())]
)  # fmt: skip
IMAGE_SCHEMA = pa.schema(
    [("image_id", pa.int64()), ("file_name", pa.string()), ("taxon", pa.string()), ("license", pa.string()),
     ("rights_holder", pa.string())]
)  # fmt: skip
JUDGMENT_SCHEMA = pa.schema(
    [("query_id", pa.int64()), ("image_id", pa.int64()), ("annotator", pa.string()), ("label", pa.string()),
     ("source", pa.string()), ("lead_time_ms", pa.int64())]
)  # fmt: skip


def write_parquet(folder: Path, query_ids: list[int]) -> dict[str, int]:
    """queries.parquet, qrels.parquet and judgments.parquet: the rows of the CSVs, typed, for Parquet readers; and
    images.parquet: every image the release labels, with its taxon, license and rights holder."""
    queries = Query.objects.filter(pk__in=query_ids).order_by("pk")
    query_rows = queries.values_list("id", "text", "supercategory", "category", "iconic_group", "split")
    qrel_rows = (
        (query_id, image_id, grade(value), value, path, license or "", holder or "")
        for query_id, image_id, value, path, license, holder in _labels(query_ids)
    )
    judgments = Judgment.objects.filter(query_id__in=query_ids).order_by("query_id", "image_id", "annotator__username")
    judgment_rows = (
        (query_id, image_id, annotator or "", value, source, lead)
        for query_id, image_id, annotator, value, source, lead in judgments.values_list(
            "query_id", "image_id", "annotator__username", "value", "source", "lead_time_ms"
        ).iterator(ROWS_PER_STATEMENT)
    )
    labeled = Label.objects.filter(query_id__in=query_ids).exclude(value="").values("image_id")
    images = Image.objects.filter(pk__in=labeled).order_by("pk")
    image_rows = (
        (image_id, file_name, taxon or "", license or "", holder or "")
        for image_id, file_name, taxon, license, holder in images.values_list(
            "id", "file_name", "taxon__scientific_name", "license", "rights_holder"
        ).iterator(ROWS_PER_STATEMENT)
    )
    return {
        "queries.parquet": _write_table(folder / "queries.parquet", QUERY_SCHEMA, query_rows.iterator()),
        "images.parquet": _write_table(folder / "images.parquet", IMAGE_SCHEMA, image_rows),
        "qrels.parquet": _write_table(folder / "qrels.parquet", QREL_SCHEMA, qrel_rows),
        "judgments.parquet": _write_table(folder / "judgments.parquet", JUDGMENT_SCHEMA, judgment_rows),
    }


def _write_table(path: Path, schema: pa.Schema, rows: Iterable[tuple[Any, ...]]) -> int:
    """Write `rows` in row groups of PARQUET_ROWS (never the whole table in memory); returns how many."""
    written = 0
    with pq.ParquetWriter(path, schema) as writer:
        batch: list[tuple[Any, ...]] = []
        for row in rows:
            batch.append(row)
            if len(batch) == PARQUET_ROWS:
                writer.write_table(_table(schema, batch))
                written, batch = written + len(batch), []
        if batch or not written:  # an empty file still carries its schema
            writer.write_table(_table(schema, batch))
            written += len(batch)
    return written


def _table(schema: pa.Schema, rows: list[tuple[Any, ...]]) -> pa.Table:
    columns: list[Any] = list(zip(*rows, strict=True)) if rows else [[] for _ in schema]
    arrays = [pa.array(column, type=field.type) for column, field in zip(columns, schema, strict=True)]
    return pa.Table.from_arrays(arrays, schema=schema)


def sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def write_sums(folder: Path, name: str) -> None:
    """`name` in `folder`: `sha256sum`'s format over every other file, by name (what `sha256sum -c` reads)."""
    lines = [f"{sha256_of(path)}  {path.name}\n" for path in sorted(folder.iterdir()) if path.name != name]
    (folder / name).write_text("".join(lines), encoding="utf-8")


def _matches(path: Path, digest: str) -> bool:
    return path.is_file() and sha256_of(path) == digest


def listed(sums: Path) -> dict[str, str]:
    """{file name: sha256} as a SHA256SUMS file lists them."""
    return {name: digest for digest, _, name in (line.partition("  ") for line in sums.read_text("utf-8").splitlines())}


def mismatches(folder: Path, sums: Path) -> list[str]:
    """The files SHA256SUMS lists whose content no longer matches (or that are gone), and files it does not list."""
    listed_files = listed(sums)
    wrong = [name for name, digest in listed_files.items() if not _matches(folder / name, digest)]
    extra = [path.name for path in folder.iterdir() if path.name not in listed_files and path.name != sums.name]
    return sorted(wrong + extra)
