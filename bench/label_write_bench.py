"""Benchmark: a batch of label changes written by labels.set_labels (one SELECT FOR UPDATE, one statement per
kind of change) beside the same changes written one at a time in one transaction (what the page and the
API did before issue 21: set_label per item), on the database DATABASE_URL names.

For each batch size, --repeat rounds: a batch of changes over a query's images (new labels, changed values
and removals mixed, as a range selection and its undo make them), timed both ways on fresh images; medians
in milliseconds, and the statements each way (Django's query log).

With --api, the same batches go through POST /api/queries/{id}/labels/ (DRF's test client in this process,
so authentication, validation and the response are counted, the network not): one request per label beside
one request for the whole batch.

Each label carries its own lead time (the labeling page measures one per image). Timed with DEBUG off, as
the server runs; statements counted by an execute wrapper.

Usage:
  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire_labelbench \
    .venv/bin/python bench/label_write_bench.py [--api]
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def setup(images: int):
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
    os.environ.setdefault("DEBUG", "1")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from django.contrib.auth import get_user_model
    from django.db import connection

    from annotator.models import Query
    from catalog.models import Image

    have = Image.objects.count()
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Image._meta.db_table} (id, file_name, license, rights_holder) "
            "SELECT g, 'bench/' || g || '.jpg', '', '' FROM generate_series(%s, %s) g ON CONFLICT DO NOTHING",
            [have + 1, images],
        )
    user, _ = get_user_model().objects.get_or_create(username="bench-annotator")
    return user, Query.objects


def changes_for(image_ids, round_number):
    from annotator.labels import LabelChange

    values = ("relevant", "not_relevant", "unsure", "")
    # Each label its own lead time, as the labeling page measures them.
    return [
        LabelChange(image_id, values[(image_id + round_number) % 4], 400 + image_id % 997) for image_id in image_ids
    ]


def one_at_a_time(query_id, changes, user):
    from django.db import transaction

    from annotator import labels

    with transaction.atomic():
        for change in changes:
            labels.set_labels(query_id=query_id, changes=[change], user=user, source="api")


def in_one_batch(query_id, changes, user):
    from annotator import labels

    labels.set_labels(query_id=query_id, changes=changes, user=user, source="api")


def _client(user):
    from rest_framework.test import APIClient

    client = APIClient()
    client.force_authenticate(user)
    return client


def _item(change):
    return {"image": change.image_id, "value": change.value or "unsure", "lead_time_ms": change.lead_time_ms}


def api_one_at_a_time(query_id, changes, user):
    client = _client(user)
    for change in changes:
        body = {"labels": [_item(change)]}
        assert client.post(f"/api/queries/{query_id}/labels/", body, format="json").status_code == 200


def api_in_one_batch(query_id, changes, user):
    body = {"labels": [_item(change) for change in changes]}
    assert _client(user).post(f"/api/queries/{query_id}/labels/", body, format="json").status_code == 200


def timed(write, query_id, changes, user):
    """Milliseconds and statements. The statements are counted by an execute wrapper, not Django's query
    log: that needs DEBUG on, which the server never runs with, and costs time of its own."""
    from django.db import connection

    statements = []

    def count(execute, sql, params, many, context):
        statements.append(sql)
        return execute(sql, params, many, context)

    with connection.execute_wrapper(count):
        started = time.perf_counter()
        write(query_id, changes, user)
        elapsed = 1000 * (time.perf_counter() - started)
    return elapsed, len(statements)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1, 50, 500, 1000])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument(
        "--api",
        action="store_true",
        help="through POST /api/queries/{id}/labels/ (DRF's test client, in process): one request per label "
        "beside one request for the batch",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a scratch PostgreSQL database.")
    user, queries = setup(images=max(args.sizes) * 2 * (args.repeat + 1))
    from django.conf import settings

    settings.DEBUG = False  # as the server runs (DEBUG=1 in the environment only lets the settings load)
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "testserver"]
    ways = (("one at a time (before)", one_at_a_time), ("set_labels (batch)", in_one_batch))
    if args.api:
        ways = (("a request per label", api_one_at_a_time), ("one request for the batch", api_in_one_batch))
    results = {}
    for size in args.sizes:
        times = {name: [] for name, _ in ways}
        statements = {}
        for round_number in range(args.repeat):
            query = queries.create(text=f"bench {size} {round_number}")
            # Each way gets its own `size` images, half of them labeled beforehand, so that its batch mixes
            # new labels with changed values and removals.
            for offset, (name, write) in enumerate(ways):
                images = range(1 + offset * size, 1 + (offset + 1) * size)
                in_one_batch(query.pk, changes_for(images[: max(1, size // 2)], round_number + 1), user)
                elapsed, count = timed(write, query.pk, changes_for(images, round_number), user)
                times[name].append(elapsed)
                statements[name] = count
        results[size] = {
            name: {"median_ms": round(statistics.median(values), 2), "statements": statements[name]}
            for name, values in times.items()
        }
        before, after = (results[size][name]["median_ms"] for name in times)
        results[size]["speed-up"] = round(before / after, 1)
        print(f"{size:5d} labels: {json.dumps(results[size])}", file=sys.stderr, flush=True)
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
