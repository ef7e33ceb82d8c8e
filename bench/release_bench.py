"""Benchmark: making a release of 250 queries and 1M labels (issue 40), beside export_inquire on the same data.

It fills a scratch PostgreSQL database as bench/export_bench.py does (--queries x --images-per-query final labels,
10% relevant), with one annotator's judgment behind each label, then, --repeat times each and alternating:

  export   export_inquire into a fresh folder: the INQUIRE CSVs, the judgments, agreement.json, completeness.json
  release  annotator.releases.publish.create: the same files from one snapshot, and TREC qrels, four Parquet
           files, croissant.json, the dataset card and SHA256SUMS, renamed into place and recorded

and prints the medians in seconds and their ratio, as JSON; then validates the last release's croissant.json with
mlcroissant and times the generation of every RecordSet's records (the NeurIPS validator's third check).

Usage:
  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire_releasebench \\
      .venv/bin/python bench/release_bench.py [--queries 250] [--images-per-query 4000] [--repeat 3]
"""

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))


def judge_every_label() -> int:
    from django.db import connection

    with connection.cursor() as cursor:  # one judgment behind each final label, as one annotator's labeling leaves
        cursor.execute(
            "INSERT INTO annotator_judgment (query_id, image_id, annotator_id, value, source, created_at, updated_at) "
            "SELECT query_id, image_id, annotator_id, value, 'keyboard', now(), now() FROM annotator_label"
        )
        return cursor.rowcount


def timed(action) -> float:
    started = time.perf_counter()
    action()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=250)
    parser.add_argument("--images-per-query", type=int, default=4000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a scratch PostgreSQL database (its labels are emptied).")
    scratch = Path(tempfile.mkdtemp(prefix="quire-release-bench-"))
    os.environ["QUIRE_DATA_DIR"] = str(scratch)
    from export_bench import fill, setup

    setup()
    from annotator.inquire.exporters import export_inquire
    from annotator.models import Release
    from annotator.releases import publish as releases

    labels = fill(args.queries, args.images_per_query)
    judgments = judge_every_label()
    Release.objects.all().delete()
    print(f"{labels:,} labels, {judgments:,} judgments; data in {scratch}", file=sys.stderr)
    runs: dict[str, list[float]] = {"export": [], "release": []}
    for n in range(args.repeat):
        runs["export"].append(timed(lambda: export_inquire(scratch / f"export-{n}")))  # noqa: B023 (run at once)
        runs["release"].append(timed(lambda: releases.create(f"bench-{n}")))  # noqa: B023
        print(f"round {n + 1}: export {runs['export'][-1]:.1f} s, release {runs['release'][-1]:.1f} s", file=sys.stderr)
    median = {kind: statistics.median(seconds) for kind, seconds in runs.items()}
    import mlcroissant as mlc

    croissant = scratch / "releases" / f"bench-{args.repeat - 1}" / "croissant.json"
    started = time.perf_counter()
    dataset = mlc.Dataset(jsonld=str(croissant))
    records = {name: sum(1 for _ in dataset.records(name)) for name in ("queries", "qrels", "images")}
    validated = time.perf_counter() - started
    print(json.dumps({
        "labels": labels, "judgments": judgments, "runs": runs, "median_seconds": median,
        "release_over_export": median["release"] / median["export"], "records": records,
        "croissant_load_and_records_seconds": validated,
    }, indent=2))  # fmt: skip
    shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()
