"""Benchmark: evaluating 250 queries with 1,000-deep runs (INQUIRE's size), reading the files included.

Generates an annotations CSV (250 queries, 1 to 1,500 positives each, like INQUIRE's spread), a
queries CSV and a 250 x 1,000 run in TREC and CSV form; then times, median of --repeat runs:

  read+evaluate   read_qrels + read_run + evaluate (all metrics, k = 50) + the grouped tables
  evaluate only   the metrics on already-read inputs
  baseline        the released INQUIRE evaluation's formulas through scikit-learn
                  (average_precision_score over the top k x r / min(k, R), ndcg_score with the
                  missed positives appended), on the same inputs
  end to end      `manage.py evaluate` as a fresh process (start-up, reading, scoring, the tables), and
                  `python -m evaluation` on the same files (the file-only path: no Django),
                  beside INQUIRE's own driver reading the same files with pandas
                  (bench/inquire_reference_eval.py), each as its own process, alternating

Usage: .venv/bin/python bench/eval_bench.py [--queries 250] [--depth 1000] [--repeat 5]
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from evaluation.inputs import read_qrels, read_run  # noqa: E402
from evaluation.report import evaluate  # noqa: E402


def generate(folder: Path, queries: int, depth: int, seed: int = 0):
    rng = np.random.default_rng(seed)
    qrels, run_csv, run_trec, query_rows = (
        ["query_id,image_id,image_path"],
        ["query_id,image_id,score"],
        [],
        [",query_id,query_text,supercategory,category,iconic_group"],
    )
    for query_id in range(1, queries + 1):
        positives = rng.choice(5_000_000, size=int(rng.integers(1, 1500)), replace=False)
        qrels += [f"{query_id},{image},train/x/{image}.jpg" for image in positives]
        hits = rng.random(depth) < 0.2
        candidates = np.where(hits, rng.choice(positives, depth), rng.integers(5_000_000, 6_000_000, depth))
        candidates = list(dict.fromkeys(candidates.tolist()))
        scores = np.sort(rng.random(len(candidates)))[::-1]
        run_csv += [f"{query_id},{image},{score:.8f}" for image, score in zip(candidates, scores, strict=True)]
        run_trec += [
            f"{query_id} Q0 {image} {rank} {score:.8f} bench"
            for rank, (image, score) in enumerate(zip(candidates, scores, strict=True), 1)
        ]
        query_rows.append(
            f"{query_id - 1},{query_id},query {query_id},"
            f"{['Appearance', 'Behavior', 'Context', 'Species'][query_id % 4]},c{query_id % 33},Birds"
        )
    for name, lines in (
        ("qrels.csv", qrels),
        ("run.csv", run_csv),
        ("run.trec", run_trec),
        ("queries.csv", query_rows),
    ):
        (folder / name).write_text("\n".join(lines) + "\n")


def sklearn_baseline(truth, run, k):
    from sklearn.metrics import average_precision_score, ndcg_score

    aps, ndcgs = [], []
    for query_id in truth.query_ids():
        ranked = run.ranked.get(query_id, [])
        positives = truth.positives[query_id]
        y_true = np.array([image in positives for image, _ in ranked], dtype=float)
        y_score = np.array([score for _, score in ranked])
        R, r = len(positives), int(y_true[:k].sum())
        aps.append(average_precision_score(y_true[:k], y_score[:k]) * r / min(k, R) if r else 0.0)
        missed = R - int(y_true.sum())
        ndcgs.append(
            ndcg_score(
                [np.concatenate([y_true, np.ones(missed)])], [np.concatenate([y_score, np.full(missed, -100.0)])], k=k
            )
        )
    return float(np.mean(aps)), float(np.mean(ndcgs))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=250)
    parser.add_argument("--depth", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    folder = Path(tempfile.mkdtemp(prefix="quire-eval-bench-"))
    generate(folder, args.queries, args.depth)
    timings = {"read_and_evaluate_trec": [], "read_and_evaluate_csv": [], "evaluate_only": [], "sklearn_baseline": []}
    for _ in range(args.repeat):
        for kind in ("trec", "csv"):
            started = time.perf_counter()
            truth = read_qrels(folder / "qrels.csv", folder / "queries.csv")
            run = read_run(folder / f"run.{kind}")
            report = evaluate(truth, run, k=50)
            report.as_json(["supercategory", "category"])
            timings[f"read_and_evaluate_{kind}"].append(time.perf_counter() - started)
        started = time.perf_counter()
        report = evaluate(truth, run, k=50)
        timings["evaluate_only"].append(time.perf_counter() - started)
        started = time.perf_counter()
        baseline = sklearn_baseline(truth, run, 50)
        timings["sklearn_baseline"].append(time.perf_counter() - started)
    command = [sys.executable, str(ROOT / "manage.py"), "evaluate", "--qrels", str(folder / "qrels.csv")]
    command += ["--queries", str(folder / "queries.csv"), "--run"]
    reference = [sys.executable, str(ROOT / "bench" / "inquire_reference_eval.py")]
    reference += [str(folder / name) for name in ("qrels.csv", "queries.csv", "run.csv")]
    files_only = [sys.executable, "-m", "evaluation", *command[3:]]  # evaluation/cli.py: no Django
    processes = {
        "command_trec": command + [str(folder / "run.trec")],
        "command_csv": command + [str(folder / "run.csv")],
        "files_only_trec": files_only + [str(folder / "run.trec")],
        "inquire_reference_pandas": reference,
    }
    outputs = {}
    for name in processes:
        timings[name] = []
    env = {**os.environ, "PYTHONDONTWRITEBYTECODE": "1"}
    for _ in range(args.repeat):
        for name, arguments in processes.items():
            started = time.perf_counter()
            outputs[name] = subprocess.run(
                arguments, check=True, capture_output=True, text=True, cwd=ROOT, env=env
            ).stdout
            timings[name].append(time.perf_counter() - started)
    overall = report.overall()
    reference_ap = float(outputs["inquire_reference_pandas"].split()[1])
    result = {
        "queries": args.queries,
        "depth": args.depth,
        "run_lines": sum(len(v) for v in run.ranked.values()),
        **{name: statistics.median(values) for name, values in timings.items()},
        "ap_equal_to_baseline": abs(overall["ap"]["mean"] - baseline[0]) < 1e-9,
        "ndcg_equal_to_baseline": abs(overall["ndcg"]["mean"] - baseline[1]) < 1e-9,
        "reference_ap_x100": reference_ap,
        "command_ap_x100": 100 * overall["ap"]["mean"],
        "reference_over_command_trec": statistics.median(timings["inquire_reference_pandas"])
        / statistics.median(timings["command_trec"]),
        "files_only_equal_to_command": outputs["files_only_trec"] == outputs["command_trec"],
        "load": os.getloadavg(),
    }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
