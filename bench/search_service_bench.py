"""Benchmark: what one process owning the card would add to each search of the others (issue 56).

Several web workers on one GPU host either each hold a copy of the vectors on the card (what Quire does) or ask
one process that owns it. The second costs a round trip per search: the query vector out, the hits back. This
measures that round trip on this machine with the transport a small service would use (the standard library's
`multiprocessing.connection` over a Unix socket, pickled numpy arrays): alone (the owner sends back an answer it
holds), and with the search, beside the same search in-process, in alternating rounds of one run. The search is
`search.card.CardRanker` on torch's CPU device (no GPU here); the transport's cost does not depend on where the
ranking runs.

  .venv/bin/python bench/search_service_bench.py [--n 200000] [--dim 1024] [--repeat 300]
"""

import argparse
import json
import multiprocessing
import os
import statistics
import sys
import tempfile
import time
from multiprocessing.connection import Client, Listener
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from search.card import CardRanker  # noqa: E402

K = 50


def world(n: int, dim: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(0)
    vectors = rng.standard_normal((n, dim), dtype=np.float32)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    queries = rng.standard_normal((64, dim), dtype=np.float32)
    return vectors.astype(np.float16), queries / np.linalg.norm(queries, axis=1, keepdims=True)


def serve(address: str, n: int, dim: int, ready: "multiprocessing.synchronize.Event") -> None:
    """The owner: holds the ranker and answers (rows, scores) for each ("rank", vector) until it is sent None;
    for ("echo", vector) it sends back the last answer unranked (the transport alone)."""
    vectors, _ = world(n, dim)
    ranker = CardRanker(vectors, np.arange(n, dtype=np.int64), "cpu")
    answer = ranker.rank(vectors[:1].astype(np.float32), K)[0]
    with Listener(address, family="AF_UNIX") as listener:
        ready.set()
        with listener.accept() as connection:
            while (asked := connection.recv()) is not None:
                what, query = asked
                if what == "rank":
                    answer = ranker.rank(query[None, :], K)[0]
                connection.send(answer)


def median_ms(run, repeat: int) -> float:
    for _ in range(10):
        run()
    times = []
    for _ in range(repeat):
        started = time.perf_counter()
        run()
        times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=200_000)
    parser.add_argument("--dim", type=int, default=1024)
    parser.add_argument("--repeat", type=int, default=300)
    arguments = parser.parse_args()
    vectors, queries = world(arguments.n, arguments.dim)
    ranker = CardRanker(vectors, np.arange(arguments.n, dtype=np.int64), "cpu")
    address = os.path.join(tempfile.mkdtemp(prefix="quire-search-service-"), "socket")
    ready = multiprocessing.get_context("spawn").Event()
    owner = multiprocessing.get_context("spawn").Process(
        target=serve, args=(address, arguments.n, arguments.dim, ready)
    )
    owner.start()
    try:
        ready.wait(300)
        with Client(address, family="AF_UNIX") as connection:
            asked = iter(range(10**9))

            def remote() -> None:
                connection.send(("rank", queries[next(asked) % len(queries)]))
                connection.recv()

            def transport() -> None:
                connection.send(("echo", queries[next(asked) % len(queries)]))
                connection.recv()

            def local() -> None:
                ranker.rank(queries[next(asked) % len(queries)][None, :], K)

            # Alternating rounds, so that drift on a shared machine falls on both alike.
            rounds: dict[str, list[float]] = {"in_process": [], "through_the_service": [], "transport_alone": []}
            for _ in range(3):
                rounds["in_process"].append(median_ms(local, arguments.repeat))
                rounds["through_the_service"].append(median_ms(remote, arguments.repeat))
                rounds["transport_alone"].append(median_ms(transport, arguments.repeat))
            connection.send(None)
    finally:
        owner.join(timeout=30)
        if owner.is_alive():
            owner.terminate()
    medians = {name: statistics.median(values) for name, values in rounds.items()}
    result = {
        "n": arguments.n,
        "dim": arguments.dim,
        "k": K,
        "search_ms": medians,
        "round_trip_ms": medians["transport_alone"],
        "service_minus_in_process_ms": medians["through_the_service"] - medians["in_process"],
        "rounds": rounds,
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
