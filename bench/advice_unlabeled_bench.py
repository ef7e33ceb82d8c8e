"""Benchmark: what the completeness advice's count of images a ranking can still show costs (advice._unlabeled),
beside the count it replaced (every image without a label, the database alone), at a collection's scale.

Builds, on the PostgreSQL of DATABASE_URL (its own database: the URL's name with `_advice_bench`, dropped and made
again), a catalog of `--images` images and one query with `--labeled` labels; and in memory a FAISS store and flat
index of 1,024-d float16 vectors for all but the first `--unembedded` images (imported, not yet embedded: the ids a
page of unlabeled images meets first, the worst order for the new count). The advice's own function runs with its
vector backend the search's FAISS one (search.backends.FaissVectors.fetch, what engine.with_vectors asks), timed
alternating with the old count, `--repeat` times; medians in milliseconds as JSON.

  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire .venv/bin/python bench/advice_unlabeled_bench.py
"""

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")
os.environ.pop("CELERY_BROKER_URL", None)
DIM = 1024


def build(images: int, labeled: int, seed: int):
    """The catalog, one query with `labeled` labels spread over the embedded images; returns the query."""
    from django.core.management import call_command
    from django.db import transaction

    from annotator.models import Decision, Label, Query, recording_label_changes
    from catalog.models import Image

    call_command("migrate", verbosity=0)
    Image.objects.bulk_create([Image(id=i, file_name=f"{i}.jpg") for i in range(1, images + 1)], batch_size=20_000)
    query = Query.objects.create(text="a query")
    chosen = np.random.default_rng(seed).choice(np.arange(1, images + 1), size=labeled, replace=False)
    with transaction.atomic(), recording_label_changes():
        Label.objects.bulk_create(
            [Label(query=query, image_id=int(i), value="not_relevant", decided_by=Decision.SINGLE) for i in chosen],
            batch_size=10_000,
        )
    return query


def faiss_backend(images: int, unembedded: int, seed: int):
    """FaissVectors over a flat index of images unembedded+1 .. images (random unit vectors, float16 store)."""
    import faiss

    from search.backends import FaissVectors
    from search.index import Searcher
    from search.store import Embeddings

    rng = np.random.default_rng(seed)
    ids = np.arange(unembedded + 1, images + 1, dtype=np.int64)
    vectors = rng.standard_normal((len(ids), DIM), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    index = faiss.IndexFlatIP(DIM)
    index.add(vectors)
    store = Embeddings(vectors.astype(np.float16), ids, np.zeros(len(ids), dtype=np.int64))
    return FaissVectors(Searcher(store, index))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--labeled", type=int, default=5_000)
    parser.add_argument("--unembedded", type=int, default=50_000)
    parser.add_argument("--repeat", type=int, default=7)
    arguments = parser.parse_args()
    from bench.postgres import own_database  # on the path set above

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        sys.exit("advice_unlabeled_bench.py: set DATABASE_URL to a PostgreSQL server the bench may make a database on.")
    os.environ["DATABASE_URL"] = own_database(url, "advice_bench")
    import django

    django.setup()
    from annotator.completeness import advice
    from annotator.models import Label
    from catalog.models import Image

    query = build(arguments.images, arguments.labeled, seed=63)
    backend = faiss_backend(arguments.images, arguments.unembedded, seed=63)

    def rankable(image_ids):  # engine._with_vectors, on this backend
        ids = np.asarray(image_ids, dtype=np.int64)
        return [int(i) for i in ids[backend.fetch(ids).found]]

    advice.rankable = rankable

    def old(most: int) -> int:  # the count before: every image without a label
        return (
            Image.objects.exclude(pk__in=Label.objects.filter(query=query).values("image_id"))
            .values("pk")[:most]
            .count()
        )

    cases = {
        "before: unlabeled images, up to 1,600 (the database alone)": lambda: old(1600),
        "now: showable by a ranking, up to 1,600": lambda: advice._unlabeled(query, 1600),
        "now: showable by a ranking, up to 1": lambda: advice._unlabeled(query, 1),
    }
    answers = {name: run() for name, run in cases.items()}
    times: dict[str, list[float]] = {name: [] for name in cases}
    for _ in range(arguments.repeat):
        for name, run in cases.items():
            started = time.perf_counter()
            run()
            times[name].append(1000 * (time.perf_counter() - started))
    result = {
        "images": arguments.images,
        "labeled": arguments.labeled,
        "unembedded (the lowest ids)": arguments.unembedded,
        "pages read at most": advice.UNLABELED_PAGES,
        "answers": answers,
        "median ms": {name: round(statistics.median(values), 2) for name, values in times.items()},
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
