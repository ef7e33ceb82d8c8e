"""Benchmark: the labeling page's server time at iNat24-like scale, on PostgreSQL.

Builds (once; reused by later runs) a database with 1,000,000 images over 10,000 taxa and 200 queries
with 1,000 labels each, and an embedding store of the same images with a FAISS index; then measures,
through Django's test client in this process (middleware, view, database, template: everything but
the network):

  grid      GET /queries/<id>/ (a 50-image grid page), beside the bare search() call it makes
  toggle    POST /queries/<id>/labels (one label change), beside a bare set_label() call
  crowd     50 simulated annotators (threads, one user and one database connection each) toggling
            for a minute; afterwards every label is checked against the last value its annotator
            sent, and every change against the history.

The vectors come from a random-weight open_clip model with 1024-dimensional output (ViT-H/14's
size); with real ViT-H/14 weights the first search of a new text also pays its text encoding.

Usage:
  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire_uibench \\
      .venv/bin/python bench/ui_bench.py [--images 1000000] [--queries 200] [--labels 1000] [--seconds 60]
"""

import argparse
import json
import os
import random
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "quire.settings")
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("ALLOWED_HOSTS", "testserver")
WORK = Path(os.environ.setdefault("QUIRE_DATA_DIR", str(Path(tempfile.gettempdir()) / "quire-ui-bench")))


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentiles(values):
    return {"p50_ms": float(np.percentile(values, 50)), "p95_ms": float(np.percentile(values, 95)), "n": len(values)}


def populate(images: int, taxa: int, queries: int, labels: int, dim: int):
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.db import connection

    from annotator.models import Query
    from catalog.models import Image

    call_command("migrate", verbosity=0)
    if Image.objects.count() == images and Query.objects.count() == queries:
        log("reusing the populated database")
        return
    log(f"populating {images:,} images, {queries} queries x {labels} labels")
    with connection.cursor() as cursor:
        cursor.execute(
            "TRUNCATE annotator_labelevent, annotator_label, annotator_query, annotator_image, annotator_taxon CASCADE"
        )
        cursor.execute(
            "INSERT INTO annotator_taxon (id, scientific_name, common_name, kingdom, phylum, class_name,"
            ' "order", family, genus, specific_epithet, image_dir_name, supercategory)'
            " SELECT g, 'Genus' || (g / 10) || ' sp' || g, 'Common ' || g, 'Animalia', 'Chordata', 'Aves',"
            " 'Order' || (g / 1000), 'Family' || (g / 100), 'Genus' || (g / 10), 'sp' || g, '', 'Birds'"
            " FROM generate_series(0, %s) g",
            [taxa - 1],
        )
        cursor.execute(
            "INSERT INTO annotator_image (id, file_name, width, height, taxon_id, license, rights_holder,"
            " observed_on, latitude, longitude)"
            " SELECT g, 'train/' || (g %% %s) || '/' || g || '.jpg', 500, 375, g %% %s, 'CC BY 4.0', 'observer',"
            " DATE '2020-01-01' + (g %% 1000), 40.0, -70.0 FROM generate_series(1, %s) g",
            [taxa, taxa, images],
        )
        cursor.execute(
            "INSERT INTO annotator_query (id, text, supercategory, category, iconic_group, split, status,"
            " fully_labeled, notes, csv_index, created_at, updated_at)"
            " SELECT g, 'bench query ' || g, 'Behavior', 'Feeding', 'Birds', 'test', 'in_progress', 'unknown',"
            " '', NULL, now(), now()"
            " FROM generate_series(1, %s) g",
            [queries],
        )
        user = get_user_model().objects.create_user("bench-seed")
        cursor.execute(
            "INSERT INTO annotator_label (query_id, image_id, value, annotator_id, created_at, updated_at)"
            " SELECT q, 1 + ((q * 7919 + i * 104729) %% %s),"
            " CASE WHEN i %% 5 = 0 THEN 'relevant' ELSE 'not_relevant' END, %s, now(), now()"
            " FROM generate_series(1, %s) q, generate_series(1, %s) i ON CONFLICT DO NOTHING",
            [images, user.pk, queries, labels],
        )
        cursor.execute(
            "INSERT INTO annotator_labelevent (query_id, image_id, old_value, new_value, user_id, source, created_at)"
            " SELECT query_id, image_id, '', value, annotator_id, 'import', now() FROM annotator_label"
        )
        cursor.execute("SELECT setval(pg_get_serial_sequence('annotator_query', 'id'), %s)", [queries])
        cursor.execute("ANALYZE")
    log("populated")


def build_search(images: int, dim: int, kind: str):
    from django.conf import settings

    from catalog.models import Image
    from search import index as search_index
    from search.spec import configured_spec, index_folder, store_root
    from search.store import EmbeddingStore
    from search.tiny_model import write_tiny_model

    model = WORK / "model"
    if not (model / "open_clip_config.json").exists():
        write_tiny_model(model, embed_dim=dim)
    settings.QUIRE_CLIP_PRETRAINED = f"local-dir:{model}"
    spec = configured_spec()
    store = EmbeddingStore(store_root(), spec.name, dim)
    if len(store.image_ids()) != images:
        log(f"writing {images:,} x {dim} vectors")
        rng = np.random.default_rng(0)
        ids = np.fromiter(
            Image.objects.order_by("id").values_list("id", flat=True).iterator(chunk_size=100_000), np.int64
        )
        taxa = np.fromiter(
            Image.objects.order_by("id").values_list("taxon_id", flat=True).iterator(chunk_size=100_000), np.int64
        )
        for start in range(0, images, 250_000):
            block = rng.standard_normal((min(250_000, images - start), dim), dtype=np.float32)
            block /= np.linalg.norm(block, axis=1, keepdims=True)
            store.write_part(
                f"bench-{start:09d}", ids[start : start + len(block)], taxa[start : start + len(block)], block
            )
        store.consolidate()
    folder = index_folder(spec.name)
    wanted = search_index.choose_kind(images, kind)
    current = folder / "current.json"
    if not current.exists() or json.loads(current.read_text())["kind"] != wanted:
        log(f"building the {wanted} index")
        embeddings = store.load()
        search_index.save(search_index.build(embeddings, wanted), folder, kind=wanted, count=len(embeddings))
    return wanted


def bench_requests(images: int, repeat: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.test import Client

    from annotator.labels import set_label
    from annotator.models import LabelSource, Query
    from search.facade import search

    user, _ = get_user_model().objects.get_or_create(username="bench-annotator")
    client = Client()
    client.force_login(user)
    rng = random.Random(1)
    query_ids = list(Query.objects.values_list("id", flat=True))
    texts = dict(Query.objects.values_list("id", "text"))
    client.get(f"/queries/{query_ids[0]}/")  # load the model and the index once
    grid, bare_search, toggle, bare_set = [], [], [], []
    for _ in range(repeat):
        query_id = rng.choice(query_ids)
        started = time.perf_counter()
        search(text=texts[query_id], k=50)
        bare_search.append(1000 * (time.perf_counter() - started))
        started = time.perf_counter()
        response = client.get(f"/queries/{query_id}/")
        grid.append(1000 * (time.perf_counter() - started))
        assert response.status_code == 200 and response.content.count(b"data-image-id=") == 50
    for index in range(repeat):
        query_id, image_id = rng.choice(query_ids), rng.randrange(1, images + 1)
        value = ("relevant", "not_relevant")[index % 2]
        started = time.perf_counter()
        set_label(query_id=query_id, image_id=image_id, value=value, user=user, source=LabelSource.API)
        bare_set.append(1000 * (time.perf_counter() - started))
        image_id = rng.randrange(1, images + 1)
        started = time.perf_counter()
        response = client.post(
            f"/queries/{query_id}/labels",
            {"image": image_id, "value": value, "source": "keyboard"},
            content_type="application/json",
        )
        toggle.append(1000 * (time.perf_counter() - started))
        assert response.status_code == 200
    return {
        "grid": percentiles(grid),
        "bare_search": percentiles(bare_search),
        "toggle": percentiles(toggle),
        "bare_set_label": percentiles(bare_set),
    }


def bench_crowd(annotators: int, seconds: float, images: int) -> dict:
    from django.contrib.auth import get_user_model
    from django.db import connection
    from django.test import Client

    from annotator.models import Label, LabelEvent, Query

    query = Query.objects.create(text="crowd bench query")
    users = [get_user_model().objects.get_or_create(username=f"crowd-{n}")[0] for n in range(annotators)]
    events_before = LabelEvent.objects.filter(query=query).count()
    last_sent: dict[int, str] = {}
    changes = [0] * annotators
    latencies: list[list[float]] = [[] for _ in range(annotators)]
    errors: list[str] = []
    deadline = time.monotonic() + seconds

    def annotate(n: int):
        client = Client()
        client.force_login(users[n])
        rng = random.Random(n)
        # Each annotator owns 200 images, so the last value it sent is each label's truth.
        own = [1 + n * 200 + i for i in range(200)]
        mine: dict[int, str] = {}
        try:
            while time.monotonic() < deadline:
                image_id = rng.choice(own)
                value = rng.choice(["relevant", "not_relevant", "unsure"])
                started = time.perf_counter()
                response = client.post(
                    f"/queries/{query.pk}/labels",
                    {"image": image_id, "value": value, "source": "keyboard"},
                    content_type="application/json",
                )
                latencies[n].append(1000 * (time.perf_counter() - started))
                if response.status_code != 200:
                    errors.append(f"{response.status_code} {response.content[:100]!r}")
                    continue
                if mine.get(image_id) != value:
                    changes[n] += 1
                mine[image_id] = value
        finally:
            connection.close()
        with lock:
            last_sent.update(mine)

    lock = threading.Lock()
    threads = [threading.Thread(target=annotate, args=(n,)) for n in range(annotators)]
    started = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.perf_counter() - started
    stored = dict(Label.objects.filter(query=query).values_list("image_id", "value"))
    mismatched = sum(stored.get(image_id) != value for image_id, value in last_sent.items())
    events = LabelEvent.objects.filter(query=query).count() - events_before
    requests = sum(len(item) for item in latencies)
    return {
        "annotators": annotators,
        "seconds": elapsed,
        "requests": requests,
        "requests_per_s": requests / elapsed,
        "labels": len(stored),
        "labels_expected": len(last_sent),
        "labels_mismatched": mismatched,
        "changes_sent": sum(changes),
        "events_written": events,
        "errors": len(errors),
        "error_examples": errors[:3],
        **{f"toggle_{key}": value for key, value in percentiles([x for item in latencies for x in item]).items()},
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--taxa", type=int, default=10_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--labels", type=int, default=1000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--kind", default="auto", choices=["auto", "flat", "ivfpq"])
    parser.add_argument("--repeat", type=int, default=200)
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a PostgreSQL database (it is emptied and filled).")
    import django

    django.setup()
    populate(args.images, args.taxa, args.queries, args.labels, args.dim)
    kind = build_search(args.images, args.dim, args.kind)
    result = {
        "images": args.images,
        "queries": args.queries,
        "labels_per_query": args.labels,
        "dim": args.dim,
        "index": kind,
    }
    log("request timings")
    result.update(bench_requests(args.images, args.repeat))
    log(json.dumps(result))
    log(f"{args.annotators} annotators for {args.seconds:.0f} s")
    result["crowd"] = bench_crowd(args.annotators, args.seconds, args.images)
    out = ROOT / "bench" / "results"
    out.mkdir(exist_ok=True)
    (out / "ui.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result))


if __name__ == "__main__":
    main()
