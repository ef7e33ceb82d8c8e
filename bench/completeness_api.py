"""One seed of `bench/completeness_bench.py --through-api`: the benchmark claim (or, `--claim query`, each query's
own) reached by a team that follows the advice through Quire's HTTP API, on the simulator's own world and annotators
(issue 62).

In a fresh data folder, on SQLite (DATABASE_URL is ignored: each seed starts from an empty database):

  the world      evaluation.worlds.inquire_world(queries, median, seed): its images become the collection (image id =
                 the world's row + 1, one taxon), their vectors the embedding store and a flat FAISS index; a
                 random-weight open_clip model of the world's dimension is configured, and its text cache holds each
                 query's text vector (no CLIP weights here: the world's text vectors stand in for the text encoder)
  the team       the simulator's people on the same seed (evaluation.benchmark_sim._start): the reviewer (who labels
                 the rankings and gives a check's first look), a second annotator (the look at what the reviewer
                 judged), `--annotators` - 2 further ones (the looks at a re-check's pairs both had judged) and the
                 adjudicator (the look nobody else can give, and every decision), each wrong on the same images as
                 in the simulator
  the server     Django's WSGI application on 127.0.0.1 (a port the system picks), in a thread of this process; the
                 team speaks HTTP to it with API tokens (evaluation/api_team.py), staff draw through it too

Prints one JSON object: the claim, what it cost, and what the frames held.

  .venv/bin/python bench/completeness_api.py --queries 10 --seed 0
  .venv/bin/python bench/completeness_api.py --queries 10 --seed 0 --claim query
"""

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ["DJANGO_SETTINGS_MODULE"] = "quire.settings"
os.environ.setdefault("SECRET_KEY", "bench-only-not-a-secret-0123456789-abcdefghijklmnopqrstuvwxyz")
os.environ["HF_HUB_OFFLINE"] = "1"
os.environ.pop("DATABASE_URL", None)
os.environ["ALLOWED_HOSTS"] = "127.0.0.1"
os.environ["SECURE_SSL_REDIRECT"] = "false"  # plain HTTP on the loopback: no proxy in front to speak TLS
os.environ["QUIRE_API_RATE_USER"] = "1000000/minute"  # the scripted team is one process, not a crowd to throttle


def load_world(world: Any, seed: int, work: Path) -> dict[int, int]:
    """The world as Quire's collection, store, index and queries; returns the query ids (Quire's -> the world's)."""
    import numpy as np
    from django.conf import settings

    from annotator.models import Query
    from catalog.models import Image, Taxon
    from search import index as search_index
    from search.clip import get_embedder
    from search.spec import configured_spec, index_folder, store_root
    from search.store import EmbeddingStore
    from search.tiny_model import write_tiny_model

    dim = world.vectors.shape[1]
    settings.QUIRE_CLIP_PRETRAINED = write_tiny_model(work / "model", embed_dim=dim)
    taxon = Taxon.objects.create(id=1, scientific_name="Mundus simulatus")
    ids = np.arange(1, len(world.vectors) + 1, dtype=np.int64)
    Image.objects.bulk_create(
        (Image(id=int(i), file_name=f"world/{i}.jpg", width=500, height=375, taxon=taxon) for i in ids),
        batch_size=5000,
    )
    spec = configured_spec()
    store = EmbeddingStore(store_root(), spec.name, dim)
    store.write_part("world", ids, np.ones(len(ids), dtype=np.int64), world.vectors.astype(np.float32))
    store.consolidate()
    embeddings = store.load()
    search_index.save(search_index.build(embeddings, "flat"), index_folder(spec.name), kind="flat", count=len(ids))
    embedder = get_embedder(spec)
    queries = {}
    for world_query in sorted(world.positives):
        query = Query.objects.create(text=f"world {seed} query {world_query}")
        embedder._text_cache[query.text] = np.asarray(world.texts[world_query], dtype=np.float32)
        queries[query.pk] = world_query
    embedder._text_cache_size = max(embedder._text_cache_size, 2 * len(queries))
    return queries


def couple_draws(seed: int, ids: dict[int, int]) -> None:
    """The server's checks draw in the simulator's coupled order (Settings.coupled_draws) of the same seed: its
    queries and images as the world's (Quire's query id -> the world's; image id = the world's row + 1). The
    server runs in this process, so its draw is replaced here; the tool's own draws are fresh entropy."""
    import numpy as np

    from annotator.completeness import checks
    from evaluation import benchmark_sim

    world_query = np.zeros(max(ids) + 1, dtype=np.int64)
    world_query[list(ids)] = list(ids.values())

    def coupled(check: Any, query_ids: Any, image_ids: Any) -> Any:
        return benchmark_sim.coupled_order(seed, check.ordinal, world_query[query_ids], image_ids - 1)

    checks.sample_order = coupled


def one_order() -> None:
    """Every annotator reads a check's pairs from the sample's start, as before 2026-12-03 (`--order one`): a
    baseline for what reading them from a place of one's own saves a team that looks at once. The server runs in
    this process, so its order is replaced here (and `share=1` hands everyone the whole sample); the tool's stays
    `sampled._own_stretch`."""
    from annotator.completeness import sampled

    sampled._own_stretch = lambda mine, *_: mine


def one_stage() -> None:
    """A query's check drawn in one stage, its whole sample deciding, as before 2026-12-03 (`--one-stage`): the
    baseline of what a first stage saves. The server runs in this process, so its sizing is replaced here; the
    tool's draws a first stage wherever it saves pairs (checks.Situation.first_stage)."""
    from annotator.completeness import checks

    checks.Situation.first_stage = property(lambda situation: 0)  # type: ignore[assignment,method-assign]


class HttpApi:
    """evaluation.api_team.Api over real HTTP: one session and API token per member."""

    def __init__(self, base: str, tokens: dict[str, str]) -> None:
        import requests

        self.base, self.sessions = base, {}
        for name, key in tokens.items():
            session = requests.Session()
            session.headers["Authorization"] = f"Token {key}"
            self.sessions[name] = session
        self.requests = 0

    def get(self, member: str, path: str, params: dict[str, Any]) -> Any:
        return self._json(self.sessions[member].get(self.base + path, params=params, timeout=600))

    def post(self, member: str, path: str, body: dict[str, Any]) -> Any:
        return self._json(self.sessions[member].post(self.base + path, json=body, timeout=600))

    def _json(self, answer: Any) -> Any:
        from evaluation.api_team import Refused

        self.requests += 1
        if answer.status_code == 409:
            raise Refused(f"{answer.request.method} {answer.url}: {answer.text}")
        if answer.status_code not in (200, 201):
            raise RuntimeError(f"{answer.request.method} {answer.url} answered {answer.status_code}: {answer.text}")
        return answer.json()


def serve() -> tuple[str, Any]:
    """Quire's WSGI application on 127.0.0.1, in a daemon thread; its address and the server (to shut down)."""
    from wsgiref.simple_server import WSGIRequestHandler, make_server

    from django.core.wsgi import get_wsgi_application

    class Quiet(WSGIRequestHandler):
        def log_message(self, *args: Any) -> None:  # thousands of requests: the bench prints its own progress
            pass

    server = make_server("127.0.0.1", 0, get_wsgi_application(), handler_class=Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return f"http://127.0.0.1:{server.server_port}", server


def run(
    queries: int, median: float, seed: int, noise: float, annotators: int, work: Path, step: int = 0,
    claim: str = "benchmark", coupled: bool = False, together: bool = False, assigned: bool = False,
) -> dict[str, Any]:  # fmt: skip
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from rest_framework.authtoken.models import Token

    from annotator.completeness.frames import unpack
    from annotator.models import Assignment, CompletenessCheck, Label, QueryFrame
    from evaluation import api_team, benchmark_sim, worlds
    from evaluation.api_team import Member

    call_command("migrate", verbosity=0)
    world = worlds.inquire_world(queries=queries, median_positives=median, seed=seed)
    ids = load_world(world, seed, work)
    options = benchmark_sim.Settings(noise=noise, annotators=annotators)
    runs = benchmark_sim._start(world, seed, options)  # the simulator's people, with the same mistakes
    if coupled:
        couple_draws(seed, ids)

    def person(name: str, who: int) -> Member:
        def says(query_id: int, image_id: int) -> bool:
            team = runs[ids[query_id]].team
            return team._says(who, image_id - 1)

        return Member(name, says)

    team = [person("reviewer", 0), person("second", 1)] + [
        person(f"annotator{who}", who) for who in range(3, annotators + 1)
    ]
    adjudicator = person("adjudicator", 2)
    users = [User.objects.create_user(p.name) for p in team]
    users.append(User.objects.create_superuser("adjudicator", "adjudicator@example.org", None))
    tokens = {user.username: Token.objects.create(user=user).key for user in users}
    if assigned:  # staff assign the annotators (not the adjudicator) to every query, as a team lead does
        Assignment.objects.bulk_create(Assignment(query_id=q, annotator=u) for q in ids for u in users[:-1])
    base, server = serve()
    api = HttpApi(base, tokens)
    started = time.perf_counter()

    def progress(spent: Any) -> None:
        print(
            f"\rseed {seed}: round {spent.rounds}, {spent.labels} labels ({spent.review} review, {spent.looks} looks,"
            f" {spent.adjudications} adjudications), {spent.draws} draws, {time.perf_counter() - started:.0f} s",
            end="", file=sys.stderr, flush=True,
        )  # fmt: skip

    spent = api_team.follow_the_advice(
        api, list(ids), team[0], team[1:], adjudicator, "adjudicator", step=step, progress=progress, claim=claim,
        together=together,
    )  # fmt: skip
    print(file=sys.stderr)
    server.shutdown()
    if claim == "query":
        each = [each_query(world, query_id, world_query, spent) for query_id, world_query in ids.items()]
        seconds = round(time.perf_counter() - started, 1)
        return {"seed": seed, "queries": queries, "claim": "query", "rounds": spent.rounds, "requests": api.requests,
                "seconds": seconds, "stuck_rounds": spent.stuck, "each_query": each}  # fmt: skip
    benchmark_checks = CompletenessCheck.objects.filter(claim=CompletenessCheck.Claim.BENCHMARK)
    check = benchmark_checks.order_by("-ordinal").first()
    in_frames = found = 0
    for frame in QueryFrame.objects.all():
        world_query = ids[frame.query_id]
        truth = {i + 1 for i in world.positives[world_query]}
        inside = truth.intersection(unpack(frame.ids).tolist())
        relevant = set(Label.objects.filter(query_id=frame.query_id, value="relevant").values_list("image", flat=True))
        in_frames += len(inside)
        found += len(inside & relevant)
    micro = found / in_frames if in_frames else 1.0
    each = list(benchmark_checks.order_by("ordinal"))
    for before, after in zip(each, each[1:], strict=False):  # what the team confirmed between two draws, and where
        sampled = set(before.images.values_list("query_id", "image_id"))
        old = {(s.query_id, i) for s in before.strata.all() for i in unpack(s.found_ids).tolist()}
        new = {(s.query_id, i) for s in after.strata.all() for i in unpack(s.found_ids).tolist()} - old
        after.confirmed_since = {"in_the_last_sample": len(new & sampled), "elsewhere": len(new - sampled)}
    return {
        "seed": seed, "queries": queries, "certified": bool(check and check.status == "certified"),
        "checks": check.ordinal if check else 0, "bound": check.recall_lower_bound if check else None,
        "micro_recall": micro, "held": micro >= 0.9 - 1e-12, "labels": spent.labels, "review": spent.review,
        "looks": spent.looks, "adjudications": spent.adjudications, "draws": spent.draws, "rounds": spent.rounds,
        "refused_adjudications": spent.refused,
        "requests": api.requests, "seconds": round(time.perf_counter() - started, 1), "in_frames": in_frames,
        "first_check": {key: spent.first_draw.get(key) for key in ("found", "sampled_from", "sample", "unconfirmed")}
        if spent.first_draw else None,
        "advice": sorted(set(spent.steps.values())), "stuck_rounds": spent.stuck,
        # The first check's sampled pairs as the world's (query, row): what the simulator's first draw is compared to.
        "first_sample": sorted([ids[q], i - 1] for q, i in each[0].images.values_list("query_id", "image_id"))
        if each else [],
        "each_check": [
            {"found": c.found_at_draw, "sampled_from": c.sampled_from, "sample": c.images.count(),
             "positives": c.positives, "looked_at": c.looked_at, "status": c.status, "tested_at": c.tested_at,
             "confirmed_since_the_last_draw": getattr(c, "confirmed_since", None)}
            for c in each
        ],
    }  # fmt: skip


def each_query(world: Any, query_id: int, world_query: int, spent: Any) -> dict[str, Any]:
    """A query's own claim as the team left it: its last check's verdict, what the query cost, and whether the
    claim holds (the frame's true positives the team labeled relevant, over those in the frame)."""
    from annotator.completeness.frames import unpack
    from annotator.models import CompletenessCheck, Judgment, Label, QueryFrame

    checks = list(CompletenessCheck.objects.filter(claim="query", query_id=query_id).order_by("ordinal"))
    check = checks[-1] if checks else None
    frame = QueryFrame.objects.filter(query_id=query_id).first()
    truth = {i + 1 for i in world.positives[world_query]}
    inside = truth.intersection(unpack(frame.ids).tolist()) if frame else set()
    relevant = set(Label.objects.filter(query_id=query_id, value="relevant").values_list("image", flat=True))
    recall = len(inside & relevant) / len(inside) if inside else 1.0
    return {
        "query_id": world_query, "positives": len(truth), "certified": bool(check and check.status == "certified"),
        "checks": spent.draws_by_query.get(query_id, 0), "labels": spent.by_query.get(query_id, 0),
        "recall": recall, "held": recall >= 0.9 - 1e-12, "in_frame": len(inside),
        "advice": spent.advice.get(query_id, {}).get("next"), "left": query_id in spent.left,
        "uncertifiable_rounds": spent.uncertifiable.get(query_id, 0),
        "each_check": [
            {"found": c.found_at_draw, "sampled_from": c.sampled_from, "sample": c.images.count(), "status": c.status,
             "first_stage": c.first_stage, "looked_at": c.looked_at}
            for c in checks
        ],
        "review": Judgment.objects.filter(query_id=query_id, annotator__username="reviewer").count(),
    }  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10)
    parser.add_argument("--median", type=float, default=46)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--noise", type=float, default=0.05)
    parser.add_argument("--annotators", type=int, default=2, help="the reviewer, the second, and any further ones")
    parser.add_argument("--step", type=int, default=0, help="the reviewer reads the advice every this many labels")
    parser.add_argument(
        "--least-judged", type=int, default=None,
        help="the judgments the server's advice wants before it reads a ranking's yield for the benchmark's claim "
        "(default: the tool's, 175; another is a rule measured, not the tool's)",
    )  # fmt: skip
    parser.add_argument(
        "--claim", choices=("benchmark", "query"), default="benchmark",
        help="the claim the team works toward: the benchmark's, or each query's own",
    )  # fmt: skip
    parser.add_argument(
        "--coupled-draws", action="store_true",
        help="the server draws each check's sample in the simulator's coupled order (benchmark_sim.coupled_order) "
        "instead of fresh entropy: a bench's common random numbers, never the tool's",
    )  # fmt: skip
    parser.add_argument(
        "--together", action="store_true",
        help="a check's looks given by the annotators at once (each loads a page before any saves), not one at a time",
    )  # fmt: skip
    parser.add_argument(
        "--order", choices=("places", "one"), default="places",
        help="the order the server hands a check's pairs in: each person's from their own place (the tool's) or the "
        "sample's start for everyone (before 2026-12-03; a baseline)",
    )  # fmt: skip
    parser.add_argument("--assigned", action="store_true", help="the annotators assigned to every query")
    parser.add_argument(
        "--one-stage", action="store_true",
        help="a query's check in one stage, its whole sample deciding (before 2026-12-03; a baseline)",
    )  # fmt: skip
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="quire-api-bench-") as folder:
        os.environ["QUIRE_DATA_DIR"] = folder
        import django

        django.setup()
        if arguments.order == "one":
            one_order()
        if arguments.one_stage:
            one_stage()
        if arguments.least_judged:
            from annotator.completeness import advice

            advice.LEAST = {**advice.LEAST, arguments.claim: arguments.least_judged}
        people = (arguments.noise, arguments.annotators)
        result = run(
            arguments.queries, arguments.median, arguments.seed, *people, Path(folder), arguments.step, arguments.claim,
            coupled=arguments.coupled_draws, together=arguments.together, assigned=arguments.assigned,
        )  # fmt: skip
    print(json.dumps(result))


if __name__ == "__main__":
    main()
