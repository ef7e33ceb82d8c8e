"""Benchmark: the team's cost and quality report (issue 55) at a benchmark's scale, beside the agreement figures.

Builds a project on the PostgreSQL of DATABASE_URL (its own database: the URL's name with `_team_bench`, dropped
and made again): `--queries` queries, `--annotators` annotators, each query's `--images` images judged by two of
them (one wrong on 5% of the images), every judgment with its event and a lead time (lognormal, median 2.5 s, one in
a hundred a break of minutes), an adjudicator deciding every disagreement. Rows are written in bulk inside
annotator.models.recording_label_changes (what annotator.labels does per save), not through the save path: the
report reads what saves leave, and the save path itself is unchanged by it (no new bookkeeping per save).

Then it times, alternating, `--repeat` times: annotator.team.costs.report (every query, Dawid-Skene included) and
annotator.team.agreement.report (resamples 0: the agreement page's), and prints medians in seconds as JSON.

  DATABASE_URL=postgres://quire:quire@127.0.0.1:5432/quire .venv/bin/python bench/team_report_bench.py
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


def build(queries: int, annotators: int, images: int, seed: int) -> int:
    from django.contrib.auth.models import User
    from django.core.management import call_command
    from django.db import transaction
    from django.utils import timezone

    from annotator.models import Decision, Judgment, Label, LabelEvent, Query, recording_label_changes
    from catalog.models import Image

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(seed)
    collection = 20 * images
    Image.objects.bulk_create([Image(id=i, file_name=f"{i}.jpg") for i in range(1, collection + 1)], batch_size=10_000)
    people = [User.objects.create_user(f"annotator{n:02d}", password="pw") for n in range(annotators)]
    judge = User.objects.create_user("adjudicator", password="pw")
    start = timezone.now() - timezone.timedelta(days=20)
    written = 0
    for q in range(queries):
        query = Query.objects.create(text=f"query {q}")
        ids = (np.arange(images) + q * 80) % collection + 1
        truth = rng.random(images) < 0.05
        pair = rng.choice(annotators, size=2, replace=False)
        judgments, events, labels = [], [], []
        votes = {}
        for who, wrong_rate in zip(pair, (0.0, 0.05), strict=True):
            wrong = rng.random(images) < wrong_rate
            leads = np.where(rng.random(images) < 0.01, rng.uniform(120e3, 1800e3, images),
                             rng.lognormal(np.log(2500), 0.5, images)).astype(int)  # fmt: skip
            for n, image in enumerate(ids.tolist()):
                value = "relevant" if truth[n] != wrong[n] else "not_relevant"
                votes.setdefault(image, []).append(value)
                when = start + timezone.timedelta(days=int(q % 20), seconds=int(n * 3 + who))
                judgments.append(Judgment(query=query, image_id=image, annotator=people[who], value=value,
                                          source="keyboard", lead_time_ms=int(leads[n]), created_at=when,
                                          updated_at=when))  # fmt: skip
                events.append(LabelEvent(query=query, image_id=image, new_value=value, user=people[who],
                                         annotator=people[who], source="keyboard",
                                         lead_time_ms=int(leads[n])))  # fmt: skip
        for n, image in enumerate(ids.tolist()):
            first, second = votes[image]
            if first == second:
                labels.append(Label(query=query, image_id=image, value=first, decided_by=Decision.AGREED))
            else:
                truth_value = "relevant" if truth[n] else "not_relevant"
                labels.append(Label(query=query, image_id=image, value=truth_value, decided_by=Decision.ADJUDICATED,
                                    annotator=judge))  # fmt: skip
        with transaction.atomic(), recording_label_changes():
            Judgment.objects.bulk_create(judgments, batch_size=5000)
            LabelEvent.objects.bulk_create(events, batch_size=5000)
            Label.objects.bulk_create(labels, batch_size=5000)
        written += len(judgments)
        print(f"\r{q + 1}/{queries} queries, {written:,} judgments", end="", file=sys.stderr, flush=True)
    print(file=sys.stderr)
    return written


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=250)
    parser.add_argument("--annotators", type=int, default=20)
    parser.add_argument("--images", type=int, default=2000, help="images per query, each judged twice")
    parser.add_argument("--repeat", type=int, default=3)
    arguments = parser.parse_args()
    from bench.postgres import own_database  # on the path set above

    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith("postgres"):
        sys.exit("team_report_bench.py: set DATABASE_URL to a PostgreSQL server the bench may make a database on.")
    os.environ["DATABASE_URL"] = own_database(url, "team_bench")
    import django

    django.setup()
    from annotator.team import agreement, costs

    started = time.perf_counter()
    judgments = build(arguments.queries, arguments.annotators, arguments.images, seed=55)
    built = time.perf_counter() - started
    report_times, agreement_times = [], []
    for _ in range(arguments.repeat):
        began = time.perf_counter()
        report = costs.report()
        report_times.append(time.perf_counter() - began)
        began = time.perf_counter()
        agreement.report(resamples=0)
        agreement_times.append(time.perf_counter() - began)
    print(json.dumps({
        "queries": arguments.queries, "annotators": len(report["annotators"]), "judgments": judgments,
        "build_seconds": round(built, 1),
        "team_report_seconds": {"median": round(statistics.median(report_times), 2),
                                "runs": [round(t, 2) for t in report_times]},
        "agreement_report_seconds": {"median": round(statistics.median(agreement_times), 2),
                                     "runs": [round(t, 2) for t in agreement_times]},
        "ratio": round(statistics.median(report_times) / statistics.median(agreement_times), 2),
    }, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
