"""Benchmark: how long commands that need no model take to start, beside importing torch alone.

Each command runs as its own process, the way a user runs it, in turns (help, evaluate --help,
import torch, help, ...) so that a noisy minute hits all of them alike; the figure is the median
wall time of --repeat runs. Goal (architecture issue): every command that needs no model starts
in less time than `import torch` alone.

Usage: .venv/bin/python bench/startup_bench.py [--repeat 7]
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as data_dir:
        env = {**os.environ, "DEBUG": "1", "QUIRE_DATA_DIR": data_dir, "HF_HUB_OFFLINE": "1"}
        env.pop("DATABASE_URL", None)
        for command in COMMANDS.values():  # warm the file cache once
            wall_time(command, env)
        times: dict[str, list[float]] = {name: [] for name in COMMANDS}
        for _ in range(args.repeat):
            for name, command in COMMANDS.items():
                times[name].append(wall_time(command, env))
    baseline = statistics.median(times['python -c "import torch" (baseline)'])
    print(f"| command | median s ({args.repeat} runs) | min s | vs import torch |")
    print("| --- | ---: | ---: | ---: |")
    for name, runs in times.items():
        median = statistics.median(runs)
        print(f"| {name} | {median:.2f} | {min(runs):.2f} | {median / baseline:.2f}x |")


if __name__ == "__main__":
    main()
