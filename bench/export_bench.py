"""Benchmark: streaming the INQUIRE label export of a 1M-label project, to choose between streaming it in
the request (as today) and a background job with a download when ready.

It fills a scratch PostgreSQL database (DATABASE_URL; its labels, queries and images are emptied first)
with --queries x --images-per-query labels, then, --repeat times each:

  export     what the export view streams now (annotator/inquire/exporters.py export_lines: on PostgreSQL, COPY
             with the columns formatted in SQL), read to the end: time to the first block, total time,
             rows per second; and once more under tracemalloc for the peak memory the export added
  stream     the ORM path it replaced (label_rows through csv_lines), the same way: the baseline
  copy       PostgreSQL's bare COPY (SELECT the same columns, unformatted) TO STDOUT: the floor

Usage:
  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire_exportbench \\
      .venv/bin/python bench/export_bench.py [--queries 250] [--images-per-query 4000] [--repeat 3]
"""

import argparse
import json
import os
import statistics
import sys
import time
import tracemalloc
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup():
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
    os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789abcdefghijklmnopqrstuvwxyz")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def fill(queries: int, images: int) -> int:
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotator.models import Query

    with connection.cursor() as cursor:
        cursor.execute("TRUNCATE annotator_labelevent, annotator_label, annotator_query CASCADE")
        cursor.execute("DELETE FROM annotator_image")
        cursor.execute(
            "INSERT INTO annotator_image (id, file_name, license, rights_holder) "
            "SELECT g, 'train/00001_Animalia_Chordata_Aves/' || md5(g::text) || '.jpg', '', '' "
            "FROM generate_series(1, %s) g",
            [images],
        )
    Query.objects.bulk_create(Query(text=f"bench query {n}") for n in range(queries))
    user, _ = get_user_model().objects.get_or_create(username="bench-annotator")
    with connection.cursor() as cursor:  # straight SQL: the bench measures reading, not writing
        cursor.execute(
            "INSERT INTO annotator_label (query_id, image_id, value, decided_by, annotator_id, created_at, updated_at) "
            "SELECT q.id, g, CASE WHEN random() < 0.1 THEN 'relevant' ELSE 'not_relevant' END, 'single', %s, now(), "
            "now() "
            "FROM annotator_query q CROSS JOIN generate_series(1, %s) g",
            [user.pk, images],
        )
        cursor.execute("ANALYZE annotator_label")
        cursor.execute("SELECT count(*) FROM annotator_label")
        return cursor.fetchone()[0]


def stream(*, memory: bool = False, orm: bool = False) -> dict:
    """The export as the view streams it (or, with `orm`, as it did through the ORM and csv.writer); with
    `memory`, under tracemalloc (which slows it several times: its time is not reported)."""
    from annotator.inquire.exporters import EXPORTS, csv_lines, export_lines

    if memory:
        tracemalloc.start()
    started = time.perf_counter()
    first = None
    rows = size = 0
    blocks = csv_lines(EXPORTS["inquire_labels.csv"](None)) if orm else export_lines("inquire_labels.csv")
    for block in blocks:
        if first is None:
            first = time.perf_counter() - started
        rows += block.count("\n" if orm else b"\n")
        size += len(block)
    total = time.perf_counter() - started
    if memory:
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
        return {"peak_mb": peak / 1e6}
    return {
        "seconds": total,
        "first_block_ms": 1000 * first,
        "rows": rows - 1,
        "rows_per_second": (rows - 1) / total,
        "mb": size / 1e6,
    }


def copy() -> dict:
    from django.db import connection

    sql = (
        "COPY (SELECT l.query_id, l.image_id, i.file_name, l.value, u.username, l.updated_at "
        "FROM annotator_label l JOIN annotator_image i ON i.id = l.image_id "
        "LEFT JOIN auth_user u ON u.id = l.annotator_id ORDER BY l.query_id, l.image_id) TO STDOUT WITH CSV"
    )
    started = time.perf_counter()
    size = 0
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as out:  # psycopg 3's COPY
        for block in out:
            size += len(block)
    return {"seconds": time.perf_counter() - started, "mb": size / 1e6}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=250)
    parser.add_argument("--images-per-query", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a scratch PostgreSQL database (its labels are emptied).")
    setup()
    started = time.perf_counter()
    labels = fill(args.queries, args.images_per_query)
    print(f"filled {labels:,} labels in {time.perf_counter() - started:.1f} s", file=sys.stderr)
    runs = {"export": [], "stream": [], "copy": []}
    for _ in range(args.repeat):  # interleaved, so that all meet the same machine
        runs["export"].append(stream())
        runs["stream"].append(stream(orm=True))
        runs["copy"].append(copy())
    median = {
        kind: {key: statistics.median(r[key] for r in results) for key in results[0]} for kind, results in runs.items()
    }
    median["export"].update(stream(memory=True))
    median["stream"].update(stream(memory=True, orm=True))
    median["ratio_export_to_copy"] = median["export"]["seconds"] / median["copy"]["seconds"]
    median["speedup_export_over_orm_stream"] = median["stream"]["seconds"] / median["export"]["seconds"]
    median["labels"] = labels
    print(json.dumps(median, indent=2))


if __name__ == "__main__":
    main()
