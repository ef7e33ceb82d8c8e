"""Writing large batches of rows: insert new keys, update changed rows, leave equal rows alone.

On PostgreSQL the rows go through COPY into a temporary table and one
INSERT ... ON CONFLICT per batch; that is what lets the iNat24 metadata (4.8M
images) import at tens of thousands of rows a second. Other databases (the
embedded SQLite) use Django's bulk_create with update_conflicts.
"""

from collections.abc import Sequence
from typing import Any

from django.db import connection


class UpsertWriter:
    """Write tuples of `fields` (the first is the primary key) into `model`'s table.

    write() returns how many rows were inserted or changed. Must be used
    inside a transaction (the PostgreSQL staging table lives until commit).
    """

    def __init__(self, model: Any, fields: Sequence[str]) -> None:  # a model class: Image, Taxon
        self.model = model
        self.fields = [model._meta.get_field(name).attname for name in fields]  # "taxon" -> "taxon_id"
        self.columns = [model._meta.get_field(name).column for name in self.fields]
        self.key = self.columns[0]
        self._staged = False

    def write(self, rows: list[tuple[Any, ...]]) -> int:
        if not rows:
            return 0
        if connection.vendor == "postgresql":
            return self._write_postgresql(rows)
        return self._write_generic(rows)

    def _write_generic(self, rows: list[tuple[Any, ...]]) -> int:
        existing = self.model.objects.in_bulk([row[0] for row in rows])
        objects, changed = [], 0
        for row in rows:
            values = dict(zip(self.fields, row, strict=True))
            old = existing.get(row[0])
            if old is not None and all(getattr(old, name) == value for name, value in values.items()):
                continue
            changed += 1
            objects.append(self.model(**values))
        self.model.objects.bulk_create(
            objects,
            batch_size=2000,
            update_conflicts=True,
            unique_fields=[self.fields[0]],
            update_fields=self.fields[1:],
        )
        return changed

    def _write_postgresql(self, rows: list[tuple[Any, ...]]) -> int:
        table = connection.ops.quote_name(self.model._meta.db_table)
        columns = ", ".join(connection.ops.quote_name(c) for c in self.columns)
        stage = "quire_import_stage"
        with connection.cursor() as cursor:
            if not self._staged:
                cursor.execute(f"DROP TABLE IF EXISTS {stage}")
                cursor.execute(
                    f"CREATE TEMPORARY TABLE {stage} ON COMMIT DROP AS SELECT {columns} FROM {table} WITH NO DATA"
                )
                self._staged = True
            else:
                cursor.execute(f"TRUNCATE {stage}")
            with cursor.cursor.copy(f"COPY {stage} ({columns}) FROM STDIN") as copy:
                for row in rows:
                    copy.write_row(row)
            others = [connection.ops.quote_name(c) for c in self.columns[1:]]
            cursor.execute(
                f"INSERT INTO {table} AS t ({columns}) SELECT {columns} FROM {stage} "
                f"ON CONFLICT ({connection.ops.quote_name(self.key)}) DO UPDATE SET "
                + ", ".join(f"{c} = EXCLUDED.{c}" for c in others)
                + f" WHERE ({', '.join('t.' + c for c in others)}) IS DISTINCT FROM "
                f"({', '.join('EXCLUDED.' + c for c in others)})"
            )
            return int(cursor.rowcount)
