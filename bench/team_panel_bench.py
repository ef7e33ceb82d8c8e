"""Benchmark: a query's dashboard page with a labeling team, before and after its agreement figures left the
request (issue 38).

Builds a fresh SQLite project: one query whose `--images` images were each judged by two annotators (who
disagree on `--disagree` of them, as a 5%-wrong annotator would), and a staff user. Then it times
GET /dashboard/<id>/ through Django's test client (middleware, view, database, template) `--repeat` times
and prints the median and p95 in milliseconds, as JSON.

Run it on two checkouts, the same arguments, one after the other on the same machine (RESULTS.md's figures
alternate the two):
  .venv/bin/python bench/team_panel_bench.py --images 2000
The figures are read off a warm cache (the second request on): with the background path the first request
says "computing…" and the figures come from the cache afterwards; before, every request bootstrapped them.
"""

import argparse
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")
os.environ["ALLOWED_HOSTS"] = "testserver"
os.environ["SECURE_SSL_REDIRECT"] = "0"  # the test client speaks plain HTTP
os.environ.pop("DATABASE_URL", None)
os.environ.pop("CELERY_BROKER_URL", None)
os.environ["QUIRE_DATA_DIR"] = tempfile.mkdtemp(prefix="quire-team-bench-")


def build(images: int, disagree: float, seed: int) -> int:
    from django.contrib.auth.models import Permission, User
    from django.core.management import call_command

    from annotator.labels import LabelChange, set_labels
    from annotator.models import Query
    from catalog.models import Image

    call_command("migrate", verbosity=0)
    Image.objects.bulk_create([Image(id=i, file_name=f"{i}.jpg") for i in range(1, images + 1)])
    query = Query.objects.create(text="Black Skimmer performing skimming")
    rng = random.Random(seed)
    truth = {i: rng.random() < 0.2 for i in range(1, images + 1)}
    for name in ("ann", "bob"):
        user = User.objects.create_user(name, password="pw")
        changes = [
            LabelChange(i, "relevant" if relevant != (name == "bob" and rng.random() < disagree) else "not_relevant")
            for i, relevant in truth.items()
        ]
        set_labels(query_id=query.pk, changes=changes, user=user, source="api")
    boss = User.objects.create_user("boss", password="pw", is_staff=True)
    boss.user_permissions.add(*Permission.objects.filter(codename__in=["view_label", "change_query"]))
    return query.pk


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=2000)
    parser.add_argument("--disagree", type=float, default=0.05)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--seed", type=int, default=0)
    options = parser.parse_args()

    import django

    django.setup()
    from django.contrib.auth.models import User
    from django.test import Client

    from common import background

    query_id = build(options.images, options.disagree, options.seed)
    client = Client()
    client.force_login(User.objects.get(username="boss"))
    url = f"/dashboard/{query_id}/"
    first = client.get(url)
    assert first.status_code == 200, first.status_code
    if hasattr(background, "wait_for_all"):
        background.wait_for_all(timeout=600)  # the background half (the new code), before the timed requests
    times = []
    for _ in range(options.repeat):
        started = time.perf_counter()
        page = client.get(url)
        times.append(1000 * (time.perf_counter() - started))
        assert page.status_code == 200 and "Agreement on" in page.content.decode()
    print(
        json.dumps(
            {
                "images": options.images,
                "judgments": 2 * options.images,
                "p50_ms": round(float(np.percentile(times, 50)), 1),
                "p95_ms": round(float(np.percentile(times, 95)), 1),
                "n": len(times),
            }
        )
    )


if __name__ == "__main__":
    main()
