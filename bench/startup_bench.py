"""Benchmark: how long commands take to start, beside importing torch alone and Django alone.

Each command runs as its own process, the way a user runs it, in turns (help, evaluate --help,
import torch, help, ...) so that a noisy minute hits all of them alike; the figure is the median
wall time of --repeat runs. Goal (architecture issue): every command that needs no model starts
in less time than `import torch` alone. With --demo, everyday commands run for real on a demo built
there first (`manage.py demo --no-serve`): `search` by an image of the collection (no text to encode,
so no torch) and by a text (the text model loaded), `export_inquire`, `api_token`, beside
`django.setup()` alone (issue 24).

Usage: .venv/bin/python bench/startup_bench.py [--repeat 7] [--demo /tmp/quire-startup --images 300]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

COMMANDS = {
    "manage.py help": [sys.executable, "manage.py", "help"],
    "manage.py evaluate --help": [sys.executable, "manage.py", "evaluate", "--help"],
    "manage.py search --help": [sys.executable, "manage.py", "search", "--help"],
    'python -c "import torch" (baseline)': [sys.executable, "-c", "import torch"],
}


def wall_time(command: list[str], env: dict) -> float:
    started = time.perf_counter()
    subprocess.run(command, cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


EVERYDAY = {
    'python -c "import django; django.setup()" (baseline)': [
        sys.executable, "-c", "import os, django; os.environ.setdefault('DJANGO_SETTINGS_MODULE', 'quire.settings'); "
        "django.setup()",
    ],
    "manage.py search --image 1": [sys.executable, "manage.py", "search", "--image", "1", "-k", "10"],
    'manage.py search "a bird in flight"': [sys.executable, "manage.py", "search", "a bird in flight", "-k", "10"],
    "manage.py export_inquire": [sys.executable, "manage.py", "export_inquire", "{demo}/export"],
    "manage.py api_token annotator": [sys.executable, "manage.py", "api_token", "annotator"],
}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    parser.add_argument("--demo", type=Path, help="build a demo here and time everyday commands on it")
    parser.add_argument("--images", type=int, default=300, help="the demo's images")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        data_dir = str(args.demo or scratch)
        env = {**os.environ, "DEBUG": "1", "QUIRE_DATA_DIR": data_dir, "HF_HUB_OFFLINE": "1"}
        env.pop("DATABASE_URL", None)
        commands = dict(COMMANDS)
        if args.demo:
            subprocess.run(
                [sys.executable, "manage.py", "demo", "--no-serve", "--images", str(args.images)],
                cwd=ROOT, env=env, check=True, stdout=subprocess.DEVNULL,
            )  # fmt: skip
            env["QUIRE_CLIP_PRETRAINED"] = f"local-dir:{args.demo / 'demo' / 'random-clip'}"
            commands |= {name: [part.format(demo=args.demo) for part in line] for name, line in EVERYDAY.items()}
        for command in commands.values():  # warm the file cache once
            wall_time(command, env)
        times: dict[str, list[float]] = {name: [] for name in commands}
        for _ in range(args.repeat):
            for name, command in commands.items():
                times[name].append(wall_time(command, env))
    baseline = statistics.median(times['python -c "import torch" (baseline)'])
    print(f"| command | median s ({args.repeat} runs) | min s | vs import torch |")
    print("| --- | ---: | ---: | ---: |")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"| {name} | {median:.2f} | {min(runs):.2f} | {median / baseline:.2f}x |")


if __name__ == "__main__":
    main()
