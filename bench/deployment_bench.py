"""Benchmark: the labeling pages under a real deployment at 1M images and 1M labels.

gunicorn (--workers, gthread) on PostgreSQL, over HTTP on 127.0.0.1, as an annotator's browser talks to
it (a session, its CSRF token, keep-alive). It builds the demo's collection into the scratch database
named by DATABASE_URL (emptied first), then grows it to --images images (rows added by SQL, each with a
random unit vector in the demo model's embedding store; the index is rebuilt, fast-scan at this size)
and --queries x --labels-per-query labels with their history. Then, one annotator at a time
(--requests each, medians and p95 of the server's own Server-Timing and of the client):

  grid        GET /queries/<id>/ : a query's page, 50 tiles with their labels
  save        POST /queries/<id>/labels : one label (keyboard), answered once stored
  dashboard   GET /dashboard/ : one row per query with its counts
  export      GET /exports/inquire_labels.csv : every label, streamed; rows per second, and the web
              worker's resident memory before and after
  baseline    GET /healthz in the same run: the server's floor (routing, middleware, one SELECT 1)

Usage:
  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire_deploybench \\
      .venv/bin/python bench/deployment_bench.py [--images 1000000] [--queries 250] [--labels-per-query 4000]
"""

import argparse
import http.client
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from load_bench import Annotator, build, django_setup, log, percentile, server_env, sessions  # noqa: E402


def grow(images: int, queries: int, per_query: int) -> None:
    """Images, their vectors, queries and labels (with history events) added by SQL, then the index."""
    from django.db import connection

    from annotator.models import Judgment, Label, LabelEvent, Query
    from catalog.models import Image
    from search import jobs
    from search.spec import configured_spec, store_root
    from search.store import EmbeddingStore

    start = (Image.objects.order_by("-id").values_list("id", flat=True).first() or 0) + 1
    extra = max(0, images - Image.objects.count())
    taxon = Image.objects.exclude(taxon=None).values_list("taxon_id", flat=True).first()
    with connection.cursor() as cursor:
        cursor.execute(
            f"INSERT INTO {Image._meta.db_table} (id, file_name, license, rights_holder, taxon_id) "
            "SELECT g, 'train/bench/' || g || '.jpg', '', '', %s FROM generate_series(%s, %s) g",
            [taxon, start, start + extra - 1],
        )
    log(f"added {extra:,} images")
    store = EmbeddingStore.existing(store_root(), configured_spec().name)
    rng = np.random.default_rng(0)
    for offset in range(0, extra, 200_000):
        ids = np.arange(start + offset, start + min(extra, offset + 200_000), dtype=np.int64)
        vectors = rng.standard_normal((len(ids), store.dim), dtype=np.float32)
        vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
        store.write_part(f"bench-{offset}", ids, np.full(len(ids), taxon or -1), vectors)
    store.consolidate()
    started = time.perf_counter()
    build = jobs.start_index_build(run_here=True)
    log(f"index: {build.built_kind} of {build.vectors:,} vectors in {time.perf_counter() - started:.0f} s")
    have = Query.objects.count()
    Query.objects.bulk_create(Query(text=f"bench query {n}") for n in range(max(0, queries - have)))
    user_id = sessions(1)[0][0]
    query_ids = list(Query.objects.order_by("id").values_list("id", flat=True)[:queries])
    with connection.cursor() as cursor:
        for query_id in query_ids:  # the labels a project of this size holds, and their history
            cursor.execute(
                f"INSERT INTO {Label._meta.db_table} (query_id, image_id, value, decided_by, annotator_id, created_at, "
                "updated_at) SELECT %s, i.id, CASE WHEN random() < 0.1 THEN 'relevant' ELSE 'not_relevant' END, "
                f"'single', %s, now(), now() FROM {Image._meta.db_table} i ORDER BY random() LIMIT %s "
                "ON CONFLICT DO NOTHING",
                [query_id, user_id, per_query],
            )
        cursor.execute(  # each label is its annotator's judgment, as annotator.labels would have left it
            f"INSERT INTO {Judgment._meta.db_table} (query_id, image_id, annotator_id, value, source, created_at, "
            "updated_at) SELECT query_id, image_id, annotator_id, value, 'api', now(), now() "
            f"FROM {Label._meta.db_table}"
        )
        cursor.execute(
            f"INSERT INTO {LabelEvent._meta.db_table} (query_id, image_id, old_value, new_value, user_id, "
            "annotator_id, source, created_at) SELECT query_id, image_id, '', value, annotator_id, annotator_id, "
            "'api', now() "
            f"FROM {Label._meta.db_table}"
        )
        cursor.execute("ANALYZE")
    from annotator.labels.tallies import recount

    recount()  # the labels went in by SQL, around annotator.labels: count them for the dashboard
    log(f"{Label.objects.count():,} labels")


def dashboard_counts(repeat: int) -> dict:
    """The dashboard's counts (every query's labels by value, and who judged each) as it read them before
    issue 25, aggregating every label and judgment, beside the tallies it reads now: in this process, on
    the same database, alternating; milliseconds, medians of `repeat`."""
    from annotator.labels import selectors
    from annotator.models import Judgment, Query

    def before():
        rows = list(Query.objects.annotate(**selectors.counted_from_labels()))
        who = list(
            Judgment.objects.filter(annotator__isnull=False).values_list("query_id", "annotator__username").distinct()
        )
        return {q.pk: q.labeled for q in rows}, len(who)

    def now():
        rows = list(selectors.with_label_counts(Query.objects.all()))
        return {q.pk: q.labeled for q in rows}, sum(map(len, selectors.annotators_by_query(rows).values()))

    times: dict[str, list[float]] = {"from_every_label_ms": [], "from_the_tallies_ms": []}
    answers = {}
    for _ in range(repeat):
        for name, function in (("from_every_label_ms", before), ("from_the_tallies_ms", now)):
            started = time.perf_counter()
            answers[name] = function()
            times[name].append(1000 * (time.perf_counter() - started))
    assert answers["from_every_label_ms"] == answers["from_the_tallies_ms"], "the tallies disagree with the labels"
    return {name: float(np.median(values)) for name, values in times.items()} | {"same_counts": True}


def timed(client: Annotator, method: str, path: str, count: int, body=None) -> dict:
    client_ms, server_ms, statuses = [], [], set()
    for n in range(count):
        started = time.perf_counter()
        try:
            status, _, server = client.request(method, path, body(n) if body else None)
        except TimeoutError:
            return {"timed_out_after_s": client.timeout, "answered_before": len(client_ms)}
        client_ms.append(1000 * (time.perf_counter() - started))
        statuses.add(status)
        if server is not None:
            server_ms.append(server)
    return {
        "statuses": sorted(statuses),
        "client_p50_ms": percentile(client_ms, 50),
        "client_p95_ms": percentile(client_ms, 95),
        "server_p50_ms": percentile(server_ms, 50) if server_ms else None,
        "server_p95_ms": percentile(server_ms, 95) if server_ms else None,
    }


def rss_mb(pid: int) -> float:
    return int(Path(f"/proc/{pid}/status").read_text().split("VmRSS:")[1].split()[0]) / 1024


def export(port: int, session_key: str, workers: list[int]) -> dict:
    before = {pid: rss_mb(pid) for pid in workers}
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=600)
    started = time.perf_counter()
    connection.request("GET", "/exports/inquire_labels.csv", headers={"Cookie": f"sessionid={session_key}"})
    response = connection.getresponse()
    lines = size = 0
    first = None
    while block := response.read(1 << 20):
        first = first or time.perf_counter() - started
        lines += block.count(b"\n")
        size += len(block)
    seconds = time.perf_counter() - started
    after = {pid: rss_mb(pid) for pid in workers}
    return {
        "status": response.status,
        "rows": lines - 1,
        "seconds": seconds,
        "rows_per_second": (lines - 1) / seconds,
        "first_block_ms": 1000 * (first or 0),
        "mb": size / 1e6,
        "worker_rss_growth_mb": max(after[pid] - before[pid] for pid in workers),
    }


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=1_000_000)
    parser.add_argument("--queries", type=int, default=250)
    parser.add_argument("--labels-per-query", type=int, default=4000)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--threads", type=int, default=4)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--dashboard-timeout", type=float, default=60)
    parser.add_argument("--data-dir", default=str(Path(tempfile.gettempdir()) / "quire-deploy-bench"))
    parser.add_argument("--reuse", action="store_true", help="use the database and data an earlier run built")
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a scratch PostgreSQL database (it is emptied).")
    data_dir = Path(args.data_dir)
    if not args.reuse:
        build(data_dir, 3000)
    django_setup(data_dir)
    if not args.reuse:
        grow(args.images, args.queries, args.labels_per_query)
    from annotator.models import Label, Query
    from catalog.models import Image

    query = Query.objects.order_by("id").first()
    pool = list(Label.objects.filter(query=query).values_list("image_id", flat=True)[:500])
    (user_id, session_key), *_ = sessions(1)
    from django.contrib.auth import get_user_model

    get_user_model().objects.filter(pk=user_id).update(is_staff=True, is_superuser=True)  # dashboard, exports
    counting = dashboard_counts(3)
    log(json.dumps(counting))
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "gunicorn", "quire.wsgi", "-c", "python:quire.gunicorn_hooks"]
    command += ["-w", str(args.workers), "--threads", str(args.threads)]
    command += ["-k", "gthread", "-b", f"127.0.0.1:{port}", "--timeout", "600", "--log-level", "warning"]
    server = subprocess.Popen(command, cwd=ROOT, env=server_env(data_dir))
    try:
        for _ in range(120):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=2).request("GET", "/healthz")
                break
            except OSError:
                time.sleep(0.5)
        workers = [
            int(p)
            for p in subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
        ]
        client = Annotator(port, session_key)
        for _ in range(args.workers * 3):  # every worker loads the model and the index once
            client.request("GET", f"/queries/{query.pk}/")
        values = ["relevant", "not_relevant", "unsure"]
        result = {
            "images": Image.objects.count(),
            "labels": Label.objects.count(),
            "queries": Query.objects.count(),
            "gunicorn": f"{args.workers} workers x {args.threads} threads (gthread)",
            "baseline_healthz": timed(client, "GET", "/healthz", args.requests),
            "grid": timed(client, "GET", f"/queries/{query.pk}/", args.requests),
            "save": timed(
                client,
                "POST",
                f"/queries/{query.pk}/labels",
                args.requests,
                lambda n: {"image": pool[n % len(pool)], "value": values[n % 3], "source": "keyboard"},
            ),
        }
        log(json.dumps(result))
        result["export"] = export(port, session_key, workers)
        log(json.dumps(result["export"]))
        # Last: the dashboard computes each query's completeness signals on a cold cache, which can hold a
        # worker thread for minutes at this size; a timeout is recorded as such.
        client.timeout = args.dashboard_timeout
        client.connection = None
        result["dashboard"] = timed(client, "GET", "/dashboard/", 3)
        # Then as an admin meets it the rest of the day: every query's signals computed and cached (the background
        # refresh the first visits started has finished: no row says "computing…"), on both workers.
        waited = time.monotonic()
        while time.monotonic() - waited < args.dashboard_timeout:
            if "computing…".encode() not in client.request("GET", "/dashboard/")[1]:
                break
            time.sleep(2)
        result["dashboard_signals_ready_s"] = time.monotonic() - waited
        result["dashboard_warm"] = timed(client, "GET", "/dashboard/", 20)
        result["dashboard_counts"] = counting
    finally:
        server.terminate()
        server.wait(timeout=60)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
