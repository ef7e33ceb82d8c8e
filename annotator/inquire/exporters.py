"""INQUIRE-format CSV exports, produced row by row so that no file is ever built whole in memory.

On PostgreSQL the two label files come straight from the database's COPY ... TO STDOUT (CSV), in blocks:
byte for byte the file the ORM path writes (the SQL formats each column as Python does; a test compares
the two), several times faster (bench/export_bench.py).

inquire_queries.csv      ,query_id,query_text,supercategory,category,iconic_group
                         (the released file's layout, unnamed index column included, so
                         the released evaluation code reads it unchanged)
inquire_annotations.csv  query_id,image_id,image_path  (relevant pairs only, like the benchmark)
inquire_labels.csv       query_id,image_id,image_path,label,annotator,updated_at  (every final label)
inquire_judgments.csv    query_id,image_id,annotator,label,source,lead_time_ms,updated_at  (every annotator's
                         judgment: what researchers ask benchmarks for beside the gold labels)
agreement.json           the agreement figures (annotator.team.agreement), written beside them by export_inquire
completeness.json        one record per query: its completeness claim (annotator.completeness.checks), beside them
"""

import csv
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any

from django.db import connection
from django.db.models import F, QuerySet

from annotator.completeness import claims
from annotator.models import Judgment, Label, LabelValue, Query
from annotator.team.agreement import report
from catalog.models import ROWS_PER_STATEMENT, Image
from common.files import atomic_path


def query_rows(query_ids: Iterable[int] | None = None) -> Iterator[list[Any]]:
    """Queries in the released files' order; queries made in Quire follow, numbered on."""
    yield ["", "query_id", "query_text", "supercategory", "category", "iconic_group"]
    queries = Query.objects.order_by(F("csv_index").asc(nulls_last=True), "id")
    if query_ids is not None:
        queries = queries.filter(id__in=list(query_ids))
    fields = ("id", "csv_index", "text", "supercategory", "category", "iconic_group")
    rows = list(queries.values_list(*fields))  # at most a few thousand queries
    next_index = max((row[1] for row in rows if row[1] is not None), default=-1) + 1
    for query_id, csv_index, text, supercategory, category, iconic_group in rows:
        if csv_index is None:
            csv_index, next_index = next_index, next_index + 1
        yield [csv_index, query_id, text, supercategory, category, iconic_group]


def annotation_rows(query_ids: Iterable[int] | None = None) -> Iterator[list[Any]]:
    yield ["query_id", "image_id", "image_path"]
    labels = _labels(query_ids).filter(value=LabelValue.RELEVANT)
    yield from (
        list(row) for row in labels.values_list("query_id", "image_id", "image__file_name").iterator(ROWS_PER_STATEMENT)
    )


def label_rows(query_ids: Iterable[int] | None = None) -> Iterator[list[Any]]:
    yield ["query_id", "image_id", "image_path", "label", "annotator", "updated_at"]
    fields = ("query_id", "image_id", "image__file_name", "value", "annotator__username", "updated_at")
    rows = _labels(query_ids).values_list(*fields).iterator(ROWS_PER_STATEMENT)
    for query_id, image_id, path, value, annotator, updated_at in rows:
        yield [query_id, image_id, path, value, annotator or "", updated_at.isoformat()]


def judgment_rows(query_ids: Iterable[int] | None = None) -> Iterator[list[Any]]:
    yield ["query_id", "image_id", "annotator", "label", "source", "lead_time_ms", "updated_at"]
    judgments = Judgment.objects.order_by("query_id", "image_id", "annotator__username")
    if query_ids is not None:
        judgments = judgments.filter(query_id__in=list(query_ids))
    fields = ("query_id", "image_id", "annotator__username", "value", "source", "lead_time_ms", "updated_at")
    for query_id, image_id, annotator, value, source, lead_time_ms, updated_at in judgments.values_list(
        *fields
    ).iterator(ROWS_PER_STATEMENT):
        lead = "" if lead_time_ms is None else lead_time_ms
        yield [query_id, image_id, annotator or "", value, source, lead, updated_at.isoformat()]


def _labels(query_ids: Iterable[int] | None) -> "QuerySet[Label]":
    labels = Label.objects.order_by("query_id", "image_id")
    if query_ids is not None:
        labels = labels.filter(query_id__in=list(query_ids))
    return labels


EXPORTS: dict[str, Callable[..., Iterator[list[Any]]]] = {
    "inquire_queries.csv": query_rows,
    "inquire_annotations.csv": annotation_rows,
    "inquire_labels.csv": label_rows,
    "inquire_judgments.csv": judgment_rows,
}
AGREEMENT_FILE = "agreement.json"
COMPLETENESS_FILE = "completeness.json"


class _Echo:
    """A file-like object whose write() returns what it was given, for streaming csv.writer output."""

    def write(self, value: str) -> str:
        return value


# A spreadsheet runs a cell that starts with one of these as a formula (=HYPERLINK(...) and worse).
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def spreadsheet_safe(value: Any) -> Any:
    """The value with a leading apostrophe when a spreadsheet would run it as a formula (OWASP's
    advice for CSV injection); numbers and other text unchanged."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS):
        return "'" + value
    return value


def csv_lines(rows: Iterable[list[Any]], *, for_spreadsheets: bool = False) -> Iterator[str]:
    """Each row as one CSV line ("\\n" endings, like the released files). The INQUIRE files are read
    by code and stay byte-compatible by default; `for_spreadsheets` neutralises formula cells."""
    writer = csv.writer(_Echo(), lineterminator="\n")
    for row in rows:
        yield writer.writerow([spreadsheet_safe(value) for value in row] if for_spreadsheets else row)


def export_lines(
    name: str, query_ids: Iterable[int] | None = None, *, for_spreadsheets: bool = False
) -> Iterator[bytes]:
    """The export `name` as UTF-8 blocks of whole lines: through PostgreSQL's COPY where it can be, else
    row by row through csv.writer."""
    if _copies(name):
        return _copied(name, query_ids, for_spreadsheets)
    return (line.encode() for line in csv_lines(EXPORTS[name](query_ids), for_spreadsheets=for_spreadsheets))


def _copies(name: str) -> bool:
    return name in _COPY_COLUMNS and connection.vendor == "postgresql"


def _count(name: str, query_ids: Iterable[int] | None) -> int:
    labels = _labels(query_ids)
    return (labels.filter(value=LabelValue.RELEVANT) if name == "inquire_annotations.csv" else labels).count()


# Each column as the ORM path writes it: timestamps as Python's isoformat() of a UTC datetime (no
# fraction when it is zero), a missing annotator as an empty field.
_UPDATED_AT = (
    "to_char(l.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') || "
    "CASE WHEN mod(date_part('microseconds', l.updated_at)::bigint, 1000000) = 0 THEN '' "
    "ELSE to_char(l.updated_at AT TIME ZONE 'UTC', '.US') END || '+00:00'"
)
_COPY_COLUMNS = {
    "inquire_annotations.csv": [("query_id", "l.query_id"), ("image_id", "l.image_id"), ("image_path", "i.file_name")],
    "inquire_labels.csv": [
        ("query_id", "l.query_id"),
        ("image_id", "l.image_id"),
        ("image_path", "i.file_name"),
        ("label", "l.value"),
        ("annotator", "u.username"),
        ("updated_at", _UPDATED_AT),
    ],
}
_TEXT_COLUMNS = {"image_path", "label", "annotator"}


def _spreadsheet_safe_sql(expression: str) -> str:
    """spreadsheet_safe() in SQL: an apostrophe before a cell that starts like a formula."""
    starts = ", ".join(f"chr({ord(c)})" for c in FORMULA_STARTS)
    return f"CASE WHEN left({expression}, 1) IN ({starts}) THEN chr(39) || {expression} ELSE {expression} END"


def _copied(name: str, query_ids: Iterable[int] | None, for_spreadsheets: bool) -> Iterator[bytes]:
    from django.contrib.auth import get_user_model

    columns = [
        f"{_spreadsheet_safe_sql(sql) if for_spreadsheets and column in _TEXT_COLUMNS else sql} AS {column}"
        for column, sql in _COPY_COLUMNS[name]
    ]
    conditions: list[str] = []
    params: list[Any] = []
    if name == "inquire_annotations.csv":
        conditions.append("l.value = %s")
        params.append(str(LabelValue.RELEVANT))
    if query_ids is not None:
        conditions.append("l.query_id = ANY(%s)")
        params.append(list(query_ids))
    where = f"WHERE {' AND '.join(conditions)}" if conditions else ""
    sql = (
        f"COPY (SELECT {', '.join(columns)} FROM {Label._meta.db_table} l "
        f"JOIN {Image._meta.db_table} i ON i.id = l.image_id "
        f"LEFT JOIN {get_user_model()._meta.db_table} u ON u.id = l.annotator_id "
        f"{where} ORDER BY l.query_id, l.image_id) TO STDOUT WITH (FORMAT csv, HEADER)"
    )
    buffered = bytearray()
    with connection.cursor() as cursor, cursor.cursor.copy(sql, params) as copy:  # psycopg 3
        for block in copy:  # about one row a block: gathered into 64 KB writes
            buffered += block
            if len(buffered) >= 1 << 16:
                yield bytes(buffered)
                buffered.clear()
    if buffered:
        yield bytes(buffered)


def export_inquire(
    out_dir: Path, query_ids: Iterable[int] | None = None, *, for_spreadsheets: bool = False
) -> dict[str, int]:
    """Write the INQUIRE CSVs and the judgments into `out_dir`, and agreement.json beside them; returns the
    number of data rows of each CSV.

    Each file is written beside its final name and renamed at the end, so an
    interrupted export never leaves a half-written file under the real name.
    """
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    counts = {}
    for name in EXPORTS:
        blocks = 0
        with atomic_path(out_dir / name) as partial, partial.open("wb") as handle:
            for block in export_lines(name, query_ids, for_spreadsheets=for_spreadsheets):
                handle.write(block)
                blocks += 1
        # csv.writer yields a block a row, header included; COPY's blocks are not rows (and a quoted field
        # may hold a newline), so its rows are counted by the database.
        counts[name] = _count(name, query_ids) if _copies(name) else blocks - 1

    with atomic_path(out_dir / AGREEMENT_FILE) as partial:
        partial.write_text(json.dumps(report(query_ids), indent=2) + "\n", encoding="utf-8")
    with atomic_path(out_dir / COMPLETENESS_FILE) as partial:
        partial.write_text(json.dumps(claims.completeness_file(query_ids), indent=2) + "\n", encoding="utf-8")
    return counts
