"""Benchmark: 50 annotators against gunicorn (4 workers) on PostgreSQL, Submits racing clicks, a worker
killed with kill -9 in the middle; then every label checked against what the server acknowledged.

It builds the demo's collection into the PostgreSQL database named by DATABASE_URL (a scratch one:
it is emptied first), serves it with `gunicorn quire.wsgi -w 4` on 127.0.0.1, and runs --annotators
threads for --seconds, each with its own session and CSRF token over plain HTTP keep-alive
connections (http.client: nothing but this machine's loopback is ever addressed). Each annotator
labels images of one shared pool of 200 (so they overlap), and now and then presses Submit over 20
of them. Half-way, a fault (--fault):

  worker     one gunicorn worker is killed with SIGKILL; gunicorn starts another (the default)
  redis      the server runs with a Redis broker and cache (its own redis-server on a free port), which is
             stopped for 10 s and started again
  postgres   the PostgreSQL cluster is restarted (`pg_ctlcluster 15 main restart`: run as root, on a
             machine whose cluster is yours to restart)

With --overlap N the pool's top N images are first drawn into a blind overlap sample of 3 judgments each
(manage.py overlap --top N --judgments 3), so saves and pages go the sealed path (annotator.labels.visibility) while
the sample fills.

Reported: requests per second; label saves' client-side and server-side (Server-Timing) p50 and p95;
answers by status, and connection errors; writes acknowledged (200) and, of those, labels whose final value
is not the last acknowledged write (or one of the writes in flight with it); acknowledged changes without a
history event; final labels that are not what the query's rule makes of the judgments. The client does not
retry: a 503 or a dropped connection is counted, not hidden.

With --server URL it loads a server that runs already (the docker stack's web container: gunicorn with
GUNICORN_WORKERS workers) and its database, as configured in this process's environment, instead: no
build, no worker killed. Run it inside the web container so that it reaches the stack's database.

Usage:
  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire_loadbench \\
      .venv/bin/python bench/load_bench.py [--annotators 50] [--seconds 60] [--images 3000]
  docker-compose -f docker/compose.yml exec -T web python bench/load_bench.py --server http://127.0.0.1:8000
"""

import argparse
import http.client
import json
import os
import random
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def log(message):
    print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


def percentile(values, q):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q / 100 * len(ordered)))] if ordered else float("nan")


def server_env(data_dir: Path, redis_url: str = "") -> dict:
    env = {k: v for k, v in os.environ.items() if k not in ("CELERY_BROKER_URL", "CACHE_URL")}
    if redis_url:
        env.update({"CELERY_BROKER_URL": redis_url, "CACHE_URL": redis_url})
    env.update(
        {
            "QUIRE_DATA_DIR": str(data_dir),
            "HF_HUB_OFFLINE": "1",
            "DEBUG": "0",
            # Plain HTTP on loopback: production's HTTPS redirects and secure cookies off for this bench.
            "SECURE_SSL_REDIRECT": "0",
            "SESSION_COOKIE_SECURE": "0",
            "CSRF_COOKIE_SECURE": "0",
            "QUIRE_API_RATE_USER": "100000/minute",
        }
    )
    return env


def build(data_dir: Path, images: int) -> None:
    """The demo's collection, embedded with the demo's stand-in model, in a fresh database."""
    env = {**server_env(data_dir), "DEBUG": "1"}
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "flush", "--no-input"], cwd=ROOT, env=env, check=False, capture_output=True)
    subprocess.run(
        [*manage, "demo", "--no-serve", "--images", str(images)], cwd=ROOT, env=env, check=True, stdout=sys.stderr
    )


def django_setup(data_dir: Path):
    os.environ.update(server_env(data_dir))
    os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
    import django

    django.setup()


def sessions(count: int) -> list[tuple[int, str]]:
    """(user id, session key) of `count` annotators, made directly (no password hashing in the bench)."""
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY, get_user_model
    from django.contrib.sessions.backends.db import SessionStore

    made = []
    for n in range(count):
        user, _ = get_user_model().objects.get_or_create(username=f"load-{n}")
        store = SessionStore()
        store[SESSION_KEY] = str(user.pk)
        store[BACKEND_SESSION_KEY] = "django.contrib.auth.backends.ModelBackend"
        store[HASH_SESSION_KEY] = user.get_session_auth_hash()
        store.create()
        made.append((user.pk, store.session_key))
    return made


class Annotator:
    """One annotator's browser: a keep-alive connection, its session cookie and CSRF token."""

    def __init__(self, port: int, session_key: str):
        self.port = port
        self.cookies = {"sessionid": session_key}
        self.connection = None
        self.timeout = 30

    def request(self, method, path, body=None):
        if self.connection is None:
            self.connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=self.timeout)
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        if body is not None:
            headers.update({"Content-Type": "application/json", "X-CSRFToken": self.cookies.get("csrftoken", "")})
        try:
            self.connection.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
            response = self.connection.getresponse()
            data = response.read()
        except (OSError, http.client.HTTPException):
            self.connection.close()
            self.connection = None
            raise
        for header in response.headers.get_all("Set-Cookie") or []:
            name, _, rest = header.partition("=")
            self.cookies[name.strip()] = rest.split(";")[0]
        timing = response.headers.get("Server-Timing", "")
        server_ms = float(timing.split("dur=")[1]) if "dur=" in timing else None
        return response.status, data, server_ms


def crowd(port: int, query_id: int, pool: list[int], users, seconds: float, kill):
    records = []  # (kind, user, images/values, status, sent, acked, client_ms, server_ms, body)
    lock = threading.Lock()
    stop_at = time.monotonic() + seconds

    def run(user_id, session_key, seed):
        rng = random.Random(seed)
        client = Annotator(port, session_key)
        while client.cookies.get("csrftoken") is None and time.monotonic() < stop_at:
            try:
                client.request("GET", f"/queries/{query_id}/")
            except (OSError, http.client.HTTPException):
                time.sleep(0.2)
        while time.monotonic() < stop_at:
            if rng.random() < 0.05:
                images = rng.sample(pool, 20)
                kind, path, body = "submit", f"/queries/{query_id}/submit", {"images": images}
            else:
                image = rng.choice(pool)
                value = rng.choice(["relevant", "not_relevant", "unsure", ""])
                kind, path = "save", f"/queries/{query_id}/labels"
                body = {"image": image, "value": value, "source": "keyboard"}
            sent = time.monotonic()
            try:
                status, data, server_ms = client.request("POST", path, body)
            except (OSError, http.client.HTTPException) as error:
                status, data, server_ms = f"connection error: {type(error).__name__}", b"", None
            acked = time.monotonic()
            with lock:
                records.append((kind, user_id, body, status, sent, acked, 1000 * (acked - sent), server_ms, data))
            time.sleep(rng.uniform(0.05, 0.3))  # a person's pace between keys, give or take

    threads = [threading.Thread(target=run, args=(uid, key, n)) for n, (uid, key) in enumerate(users)]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    time.sleep(seconds / 2)
    kill()
    for thread in threads:
        thread.join()
    return records, time.monotonic() - started


def check(records, query_id):
    """Each annotator's judgments against what the server acknowledged to them, and acknowledged changes
    against the history; and every final label against the query's rule over the judgments (issue 37: a clear
    racing a judgment lost final labels)."""
    from django.db import connection

    from annotator.labels import finals_astray
    from annotator.models import Judgment, LabelEvent

    connection.close()  # this process's connection may not have lived through the fault (a restart)
    writes = defaultdict(list)  # (user, image) -> [(sent, acked, value)]
    changes = []  # (user, image, value) acknowledged as changed
    for kind, user, body, status, sent, acked, _, _, data in records:
        if status != 200:
            continue
        answer = json.loads(data)
        if kind == "save":
            writes[user, body["image"]].append((sent, acked, body["value"]))
            if answer["saved"][0]["changed"]:
                changes.append((user, body["image"], body["value"]))
        else:
            for image in answer["labeled"]:
                writes[user, image].append((sent, acked, "not_relevant"))
                changes.append((user, image, "not_relevant"))
    stored = {
        (user, image): value
        for user, image, value in Judgment.objects.filter(query_id=query_id).values_list(
            "annotator_id", "image_id", "value"
        )
    }
    wrong = 0
    for key, done in writes.items():
        last = max(done, key=lambda w: w[1])
        # The last acknowledged write, or one in flight with it (its commit order is the server's).
        allowed = {value for sent, acked, value in done if sent < last[1] and acked > last[0]}
        if stored.get(key, "") not in allowed:
            wrong += 1
    events = set(LabelEvent.objects.filter(query_id=query_id).values_list("user_id", "image_id", "new_value"))
    unrecorded = sum(1 for change in changes if change not in events)
    return wrong, unrecorded, len(writes), len(finals_astray(query_id))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--annotators", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--images", type=int, default=3000)
    parser.add_argument("--workers", type=int, default=4)
    parser.add_argument("--server", help="load this running server (http://HOST:PORT) instead of starting one")
    parser.add_argument("--fault", choices=["worker", "redis", "postgres"], default="worker")
    parser.add_argument(
        "--overlap",
        type=int,
        default=0,
        help="draw the pool's top N into a blind overlap sample of 3 judgments each first (the sealed path)",
    )
    args = parser.parse_args()
    if not os.environ.get("DATABASE_URL", "").startswith("postgres"):
        sys.exit("Set DATABASE_URL to a scratch PostgreSQL database (it is emptied).")
    if args.server:
        return load_running_server(args)
    data_dir = Path(tempfile.mkdtemp(prefix="quire-load-"))
    log(f"building the demo collection ({args.images} images) in {data_dir}")
    build(data_dir, args.images)
    django_setup(data_dir)
    from annotator.models import Query
    from search.facade import search

    query = Query.objects.order_by("id").first()
    pool = [hit.image_id for hit in search(text=query.text, k=200)]
    if args.overlap:
        from annotator.team.overlap import draw_sample

        log(f"overlap sample: the top {draw_sample(query, top=args.overlap, wanted=3)} images, 3 judgments each")
    users = sessions(args.annotators)
    port = free_port()
    redis = Redis() if args.fault == "redis" else None
    log(f"gunicorn with {args.workers} workers on 127.0.0.1:{port}")
    server = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "quire.wsgi", "-c", "python:quire.gunicorn_hooks",
         "-w", str(args.workers), "-b", f"127.0.0.1:{port}", "--timeout", "60", "--log-level", "warning"],
        cwd=ROOT,
        env=server_env(data_dir, redis.url if redis else ""),
    )  # fmt: skip
    killed = []

    def kill_one_worker():
        children = subprocess.run(["pgrep", "-P", str(server.pid)], capture_output=True, text=True).stdout.split()
        if children:
            os.kill(int(children[0]), signal.SIGKILL)
            killed.append(f"gunicorn worker {children[0]} killed")
            log(f"killed gunicorn worker {children[0]} with SIGKILL")

    def restart_postgres():
        log("restarting PostgreSQL")
        subprocess.run(["pg_ctlcluster", "--skip-systemctl-redirect", "15", "main", "restart"], check=True)
        killed.append("postgres restarted")

    def redis_away():
        redis.stop()
        log("Redis stopped for 10 s")
        time.sleep(10)
        redis.start()
        killed.append("redis stopped 10 s")

    fault = {"worker": kill_one_worker, "postgres": restart_postgres, "redis": redis_away}[args.fault]

    try:
        # Ready once a worker answers (each loads the index and the text encoder first: quire/gunicorn_hooks.py).
        for _ in range(120):
            try:
                probe = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
                probe.request("GET", "/accounts/login/")
                probe.getresponse().read()
                break
            except (OSError, http.client.HTTPException):
                time.sleep(0.5)
        # Baseline, same server and data: one annotator alone for 10 s (no kill).
        alone, _ = crowd(port, query.pk, pool, users[:1], 10, lambda: None)
        records, elapsed = crowd(port, query.pk, pool, users, args.seconds, fault)
    finally:
        server.terminate()
        server.wait(timeout=30)
        if redis:
            redis.stop()
    report(args, records, alone, elapsed, query, killed)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Redis:
    """A private redis-server on a free loopback port, so that stopping it disturbs nothing else."""

    def __init__(self):
        self.port = free_port()
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process = None
        self.start()

    def start(self):
        self.process = subprocess.Popen(
            ["redis-server", "--bind", "127.0.0.1", "--port", str(self.port), "--save", "", "--appendonly", "no"],
            stdout=subprocess.DEVNULL,
        )
        time.sleep(0.5)

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=10)


def load_running_server(args):
    """The same crowd against a server that runs already, e.g. the docker stack's web container."""
    from urllib.parse import urlsplit

    import django

    django.setup()
    from annotator.models import Query
    from search.facade import search

    port = urlsplit(args.server).port or 80
    query = Query.objects.order_by("id").first()
    pool = [hit.image_id for hit in search(text=query.text, k=200)]
    users = sessions(args.annotators)
    log(f"{args.annotators} annotators against {args.server} for {args.seconds:.0f} s")
    alone, _ = crowd(port, query.pk, pool, users[:1], 10, lambda: None)
    records, elapsed = crowd(port, query.pk, pool, users, args.seconds, lambda: None)
    report(args, records, alone, elapsed, query, [])


def report(args, records, alone, elapsed, query, killed):
    statuses = Counter(str(r[3]) for r in records)
    saves = [r for r in records if r[0] == "save" and r[3] == 200]
    wrong, unrecorded, images, astray = check(records, query.pk)
    result = {
        "server": args.server or f"gunicorn -w {args.workers} on this machine",
        "annotators": args.annotators,
        "seconds": round(elapsed, 1),
        "requests": len(records),
        "requests_per_second": round(len(records) / elapsed, 1),
        "statuses": dict(statuses),
        "save_client_ms": {"p50": percentile([r[6] for r in saves], 50), "p95": percentile([r[6] for r in saves], 95)},
        "save_server_ms": {
            "p50": percentile([r[7] for r in saves if r[7] is not None], 50),
            "p95": percentile([r[7] for r in saves if r[7] is not None], 95),
        },
        "baseline_one_annotator_save_server_ms": {
            "p50": percentile([r[7] for r in alone if r[0] == "save" and r[7] is not None], 50),
            "p95": percentile([r[7] for r in alone if r[0] == "save" and r[7] is not None], 95),
        },
        "submits_ok": sum(1 for r in records if r[0] == "submit" and r[3] == 200),
        "fault": killed,
        "writes_acknowledged": sum(1 for r in records if r[3] == 200),
        "refused_503": statuses.get("503", 0),
        "images_written": images,
        "labels_not_last_acknowledged": wrong,
        "acknowledged_changes_without_event": unrecorded,
        "final_labels_not_as_the_rule_says": astray,
        "overlap_sample": args.overlap,
        "server_errors_500": statuses.get("500", 0),
    }
    print(json.dumps(result, indent=2))
    log(f"median save server time {statistics.median([r[7] for r in saves if r[7]]):.1f} ms")


if __name__ == "__main__":
    main()
