"""Benchmark: how long the labeling page takes to handle a key, with 50, 1,500 and 5,000 tiles loaded.

For each checkout (this tree, and a baseline commit checked out with `git worktree` when
--baseline-commit is given) it builds the demo in a scratch data directory, serves it with
`manage.py runserver`, and drives Debian's Chromium through Playwright: log in, open a query with
the grid filled to 50 or 1,500 tiles, then send --keys keys (moves, label keys, undo) one at a
time. Each key's time is measured in the page: from dispatching the keydown to the end of the
style and layout it caused (a forced layout read), and to the next frame painted (a task queued
from that frame's animation callback), which is what the annotator sees. Saves go to the server
asynchronously and are not in the figures.

Usage: .venv/bin/python bench/key_latency_bench.py [--images 5100] [--tiles 50 1500 5000] [--keys 300]
           [--baseline-commit REV]
"""

import argparse
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parents[1]
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--disable-quic",
]
# A day's mix: mostly moves, some labels, an undo now and then.
KEYS = ["ArrowRight", "ArrowRight", "ArrowDown", "1", "ArrowRight", "0", "ArrowUp", "u", "ArrowRight", "z"]

MEASURE = """async ({keys, count}) => {
  const times = [];
  for (let i = 0; i < count; i++) {
    const key = keys[i % keys.length];
    const focused = document.activeElement;
    const target = focused && focused !== document.body ? focused : document;
    const start = performance.now();
    target.dispatchEvent(new KeyboardEvent("keydown", {key, bubbles: true, cancelable: true}));
    document.body.offsetHeight;  // style and layout the key caused
    const layout = performance.now() - start;
    // The next frame drawn: a task queued from the frame's animation callback runs once it is painted.
    await new Promise((resolve) => requestAnimationFrame(() => setTimeout(resolve, 0)));
    times.push([layout, performance.now() - start]);
    await new Promise((resolve) => setTimeout(resolve, 15));
  }
  return times;
}"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@contextmanager
def served(checkout: Path, images: int):
    """Build the demo from `checkout` in a scratch data directory and serve it; yield the base URL."""
    data = Path(tempfile.mkdtemp(prefix="quire-keys-"))
    env = {k: v for k, v in os.environ.items() if k not in {"DATABASE_URL", "CELERY_BROKER_URL"}}
    env.update({"DEBUG": "1", "QUIRE_DATA_DIR": str(data), "HF_HUB_OFFLINE": "1"})
    manage = [sys.executable, "manage.py"]
    subprocess.run([*manage, "demo", "--no-serve", "--images", str(images)], cwd=checkout, env=env, check=True)
    # Older checkouts kept the demo's model in the process only: name it for their server too.
    env["QUIRE_CLIP_PRETRAINED"] = f"local-dir:{data / 'demo' / 'random-clip'}"
    port = free_port()
    server = subprocess.Popen(
        [*manage, "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=checkout,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(120):
            try:
                urllib.request.urlopen(f"http://127.0.0.1:{port}/accounts/login/", timeout=2).close()
                break
            except OSError:
                time.sleep(0.5)
        yield f"http://127.0.0.1:{port}"
    finally:
        server.terminate()
        server.wait(timeout=20)
        shutil.rmtree(data, ignore_errors=True)


def measure(base_url: str, tiles: int, keys: int) -> list[list[float]]:
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        # bypass_csp: Playwright's wait_for_function evaluates a string, which the page's policy refuses.
        page = browser.new_page(viewport={"width": 1280, "height": 720}, bypass_csp=True)
        page.goto(f"{base_url}/accounts/login/?next=/queries/1/")
        page.fill('input[name="username"]', "annotator")
        page.fill('input[name="password"]', "quire-demo")
        page.click('button[type="submit"], input[type="submit"]')
        page.wait_for_url("**/queries/1/")
        page.goto(f"{base_url}/queries/1/?size={50 if tiles <= 50 else 500}")
        while page.locator(".tile").count() < tiles:
            count = page.locator(".tile").count()
            page.click('[data-action="load-more"]')
            page.wait_for_function(f"document.querySelectorAll('.tile').length > {count}")
        page.locator(".tile").first.click()  # a selection to move from (and one label)
        times = page.evaluate(MEASURE, {"keys": KEYS, "count": keys})
        browser.close()
    return times


def summary(times: list[list[float]]) -> str:
    """Median and p95 of the layout, then of the time to the next painted frame."""
    cells = []
    for which in (0, 1):
        ordered = sorted(time[which] for time in times)
        cells += [f"{statistics.median(ordered):.1f}", f"{ordered[int(0.95 * (len(ordered) - 1))]:.1f}"]
    return " | ".join(cells)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--images", type=int, default=5100)
    parser.add_argument("--keys", type=int, default=300)
    parser.add_argument("--tiles", type=int, nargs="+", default=[50, 1500, 5000], help="grid sizes (at most --images)")
    parser.add_argument("--baseline-commit", help="also measure this commit's page (a git worktree), e.g. de51755")
    args = parser.parse_args()
    checkouts = {"this tree": ROOT}
    worktree = None
    if args.baseline_commit:
        worktree = Path(tempfile.mkdtemp(prefix="quire-baseline-")) / "tree"
        subprocess.run(
            ["git", "worktree", "add", "-q", "--detach", str(worktree), args.baseline_commit], cwd=ROOT, check=True
        )
        checkouts[f"baseline {args.baseline_commit}"] = worktree
    results = {}
    try:
        for name, checkout in checkouts.items():
            with served(checkout, args.images) as base_url:
                for tiles in args.tiles:
                    results[(name, tiles)] = measure(base_url, tiles, args.keys)
    finally:
        if worktree:
            subprocess.run(["git", "worktree", "remove", "--force", str(worktree)], cwd=ROOT, check=False)
    print(f"| page | tiles | layout, median ms | layout, p95 ms | next frame, median ms | p95 ms ({args.keys} keys) |")
    print("| --- | ---: | ---: | ---: | ---: | ---: |")
    for (name, tiles), times in results.items():
        print(f"| {name} | {tiles} | {summary(times)} |")


if __name__ == "__main__":
    main()
