"""Benchmark: importing an iNat-format metadata file into PostgreSQL.

Generates an iNat24-like JSON (default 1,000,000 images, 10,000 taxa), then
measures, each in its own process so that peak memory is its own:

  parse       reading the file the way the importer does (every section), no database: the floor
  import      `import_inat` into empty tables (COPY into a staging table + INSERT ... ON CONFLICT)
  reimport    the same file again (nothing changes: the idempotent path)
  bulk_create the same import through Django's bulk_create(update_conflicts=True): the baseline
              (what the embedded SQLite path uses)

Usage (PostgreSQL; the database is created if missing and its Quire tables are emptied):
  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire_bench \\
      .venv/bin/python bench/import_bench.py [--images 1000000] [--taxa 10000] [--repeat 1]
"""

import argparse
import json
import os
import random
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def generate(path: Path, images: int, taxa: int, seed: int = 0) -> None:
    """Write an iNat24-shaped file: images, then categories, annotations, licenses (the real order)."""
    rng = random.Random(seed)
    with path.open("w") as out:
        out.write('{"info": {"description": "bench"}, "images": [')
        for image_id in range(images):
            taxon = image_id % taxa
            record = {
                "id": image_id,
                "width": 500,
                "height": rng.choice([333, 375, 500]),
                "file_name": f"train/{taxon:05d}_Animalia_Chordata_Aves_Order_Family_Genus{taxon}_sp/"
                f"{rng.getrandbits(128):032x}.jpg",
                "license": 1 + image_id % 3,
                "rights_holder": f"observer {rng.randrange(100000)}",
                "date": f"20{10 + image_id % 14}-0{1 + image_id % 9}-1{image_id % 10} 00:00:00+00:00",
                "latitude": round(rng.uniform(-60, 70), 6),
                "longitude": round(rng.uniform(-180, 180), 6),
                "location_uncertainty": rng.choice([None, 5, 30, 250]),
            }
            out.write(("," if image_id else "") + json.dumps(record))
        out.write('], "categories": [')
        for taxon in range(taxa):
            record = {
                "id": taxon,
                "name": f"Genus{taxon} species{taxon}",
                "common_name": f"Common {taxon}",
                "supercategory": "Birds",
                "kingdom": "Animalia",
                "phylum": "Chordata",
                "class": "Aves",
                "order": "Order",
                "family": "Family",
                "genus": f"Genus{taxon}",
                "specific_epithet": f"species{taxon}",
                "image_dir_name": f"{taxon:05d}_Animalia_Chordata_Aves_Order_Family_Genus{taxon}_sp",
            }
            out.write(("," if taxon else "") + json.dumps(record))
        out.write('], "annotations": [')
        for image_id in range(images):
            out.write(
                ("," if image_id else "")
                + f'{{"id": {image_id}, "image_id": {image_id}, "category_id": {image_id % taxa}}}'
            )
        out.write(
            '], "licenses": [{"id": 1, "name": "CC BY 4.0", "url": ""}, {"id": 2, "name": "CC BY-NC 4.0", "url": ""},'
            ' {"id": 3, "name": "CC0", "url": ""}]}'
        )


def ensure_database(url: str) -> None:
    import psycopg
    from dj_database_url import parse

    config = parse(url)
    admin = psycopg.connect(
        host=config["HOST"],
        port=config["PORT"] or 5432,
        user=config["USER"],
        password=config["PASSWORD"],
        dbname="postgres",
        autocommit=True,
    )
    with admin:
        if not admin.execute("SELECT 1 FROM pg_database WHERE datname = %s", [config["NAME"]]).fetchone():
            admin.execute(f'CREATE DATABASE "{config["NAME"]}"')


def measure(mode: str, path: str) -> dict:
    """Run one measurement in this process; return seconds, images and peak memory."""
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
    os.environ.setdefault("SECRET_KEY", "bench")
    import django

    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from catalog.importers import inat
    from catalog.importers.writers import UpsertWriter

    call_command("migrate", verbosity=0)
    if mode in ("import", "bulk_create"):
        with connection.cursor() as cursor:
            cursor.execute("TRUNCATE annotator_labelevent, annotator_label, annotator_image, annotator_taxon CASCADE")
    if mode == "bulk_create":
        UpsertWriter.write = lambda self, rows: self._write_generic(rows) if rows else 0
    start = time.perf_counter()
    if mode == "parse":
        for section in ("licenses", "categories", "annotations"):
            for _ in inat._items(Path(path), section):
                pass
        images = sum(1 for _ in inat._items(Path(path), "images"))
    else:
        images = inat.import_inat(Path(path)).images
    seconds = time.perf_counter() - start
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    return {"mode": mode, "seconds": seconds, "images": images, "peak_mb": peak_mb}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--taxa", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--modes", default="parse,import,reimport,bulk_create")
    parser.add_argument("--measure", nargs=2, metavar=("MODE", "FILE"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.measure:
        print(json.dumps(measure(*args.measure)))
        return

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database for this benchmark (it is created if missing).")
    ensure_database(url)
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "bench_inat.json"
        start = time.perf_counter()
        generate(path, args.images, args.taxa)
        print(
            f"generated {path.stat().st_size / 1e6:.0f} MB ({args.images} images, {args.taxa} taxa) "
            f"in {time.perf_counter() - start:.1f} s",
            flush=True,
        )
        results: dict[str, list[dict]] = {}
        for _ in range(args.repeat):
            for mode in args.modes.split(","):
                completed = subprocess.run(
                    [sys.executable, __file__, "--measure", mode, str(path)], capture_output=True, text=True, cwd=ROOT
                )
                if completed.returncode:
                    sys.exit(f"{mode} failed:\n{completed.stderr}")
                result = json.loads(completed.stdout.strip().splitlines()[-1])
                results.setdefault(mode, []).append(result)
                print(
                    f"  {mode:<12} {result['seconds']:8.1f} s  {result['images'] / result['seconds']:>9,.0f} images/s"
                    f"  peak {result['peak_mb']:,.0f} MB",
                    flush=True,
                )
    print("\n| step | median s | images/s | peak memory | vs bulk_create |")
    print("| --- | ---: | ---: | ---: | ---: |")
    baseline = statistics.median(r["seconds"] for r in results["bulk_create"]) if "bulk_create" in results else None
    for mode, runs in results.items():
        seconds = statistics.median(r["seconds"] for r in runs)
        rate = runs[0]["images"] / seconds
        ratio = "baseline" if mode == "bulk_create" or not baseline else f"{baseline / seconds:.1f}x faster"
        print(f"| {mode} | {seconds:.1f} | {rate:,.0f} | {max(r['peak_mb'] for r in runs):,.0f} MB | {ratio} |")


if __name__ == "__main__":
    main()
