"""Scoring an uploaded run outside the web request.

The upload is stored with a Scoring row (queued) and answered at once; `score` then reads the files,
scores the run and saves the report, in a Celery worker or, with no broker, in the web process's
background thread (common/background.py). A 200 MB run takes a minute or more to read and score, too
long to hold a request; the status page polls until the report is ready or the error is known.

`score` may run twice for one scoring (a worker killed mid-way gives its message back; an embedded
server restarted mid-way sends it again from the status page): it starts over from the stored files
and does nothing once the scoring has finished.
"""

import os
import tempfile
from pathlib import Path
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.files import File
from django.db import IntegrityError, transaction
from django.utils import timezone

from common import background

from .inputs import GroundTruth, qrels_from_database, read_qrels, read_queries, read_run
from .models import SavedReport, SavedRun, Scoring
from .report import Report, evaluate

ROLES = ("run", "qrels", "queries")


# evaluation/tasks.py: runs `score` below on a worker.
SCORE_TASK = "evaluation.score_run"
UNFINISHED = (Scoring.Status.QUEUED, Scoring.Status.RUNNING)


def upload_name(upload: "File[Any]", role: str) -> str:
    """The uploaded file's own name, for messages: its last path part, printable, or the role's name."""
    name = os.path.basename(str(upload.name or "")).replace("\x00", "").strip()
    name = name.encode()[:255].decode(errors="ignore")  # a file system's limit is 255 bytes, not characters
    return name or f"{role}.csv"


def start(data: dict[str, Any], user: User | AnonymousUser | None) -> Scoring:
    """Store the uploaded files with a queued Scoring and send it to be scored once committed. An upload
    whose form was sent before (its `submission` key) is that scoring, not a second one."""
    if data.get("submission") and (earlier := Scoring.objects.filter(submission=data["submission"]).first()):
        return earlier
    fields = {}
    for role in ROLES:
        if data.get(role):
            fields[role] = data[role]
            fields[f"{role}_name"] = upload_name(data[role], role)
    try:
        with transaction.atomic():
            scoring = _queued(data, user, fields)
    except IntegrityError:  # the same form's other submit stored it a moment ago
        return Scoring.objects.get(submission=data["submission"])
    return scoring


def _queued(data: dict[str, Any], user: User | AnonymousUser | None, fields: dict[str, Any]) -> Scoring:
    """A new queued Scoring of the upload, sent to be scored once the transaction commits."""
    scoring = Scoring.objects.create(
        submission=data.get("submission"),
        name=data["name"],
        protocol=data["protocol"],
        k=data.get("k"),
        normaliser=data.get("normaliser") or "",
        ties=data.get("ties") or "average",
        release=data.get("release") or "",
        uploaded_by=user if user and user.is_authenticated else None,
        **fields,
    )
    transaction.on_commit(lambda: _send(scoring.pk))
    return scoring


def _send(scoring_id: int) -> None:
    """Queue the scoring; if the broker is away, the scoring ends failed with the reason (nothing stays
    "queued" for ever) and QueueUnavailable goes on to the view, which answers 503."""
    try:
        background.submit(SCORE_TASK, scoring_id)
    except background.QueueUnavailable as error:
        _fail(Scoring.objects.get(pk=scoring_id), str(error))
        raise


def resume_lost() -> list[int]:
    """With no broker, send again each unfinished scoring that no background thread of this process holds (the
    server was restarted while it waited or ran); the ids sent. Embedded beat's task (common/beat.py): with a
    broker, the broker gives back a lost worker's task and this sends nothing."""
    if not background.embedded():
        return []
    sent = []
    for scoring_id in Scoring.objects.filter(status__in=UNFINISHED).values_list("pk", flat=True):
        if not background.is_pending(SCORE_TASK, scoring_id):
            background.submit(SCORE_TASK, scoring_id)
            sent.append(scoring_id)
    return sent


def score(scoring_id: int) -> Scoring:
    """Read, score and save; a scoring whose files are wrong ends failed, with the message that says
    which file and line to fix."""
    scoring = Scoring.objects.get(pk=scoring_id)
    if scoring.finished:
        return scoring
    Scoring.objects.filter(pk=scoring.pk).update(status=Scoring.Status.RUNNING, started_at=timezone.now())
    try:
        report, truth = _evaluate(scoring)
    except ValueError as error:  # InputError is one
        _fail(scoring, str(error))
    except Exception:
        _fail(scoring, "Scoring stopped on an internal error; the server's log has the details.")
        raise
    else:
        _save(scoring, report, truth)
    scoring.refresh_from_db()
    return scoring


def _fail(scoring: Scoring, message: str) -> None:
    """Record why, and delete the uploaded files: a run that did not score leaves nothing stored."""
    for role in ROLES:
        stored = getattr(scoring, role)
        if stored:
            stored.delete(save=False)
    Scoring.objects.filter(pk=scoring.pk).update(
        status=Scoring.Status.FAILED, error=message, finished_at=timezone.now(), run="", qrels="", queries=""
    )


def _evaluate(scoring: Scoring) -> tuple[Report, GroundTruth]:
    # The readers name the file in their messages: they read it through a link bearing the uploaded name.
    with tempfile.TemporaryDirectory(prefix="quire-scoring-") as scratch:
        paths = {}
        for role in ROLES:
            stored = getattr(scoring, role)
            if stored:
                (Path(scratch) / role).mkdir()
                paths[role] = Path(scratch) / role / getattr(scoring, f"{role}_name")
                paths[role].symlink_to(Path(stored.path).resolve())
        try:
            if scoring.release:
                truth = _release_truth(scoring.release, paths.get("queries"))
            elif "qrels" in paths:
                truth = read_qrels(paths["qrels"], paths.get("queries"))
            elif scoring.protocol == "rerank":
                queries = read_queries(paths["queries"]) if "queries" in paths else {}
                truth = GroundTruth({}, {}, queries, source="rerank candidates")
            else:
                truth = qrels_from_database()
                if "queries" in paths:
                    truth.queries = read_queries(paths["queries"])
            run = read_run(paths["run"], queries=truth.queries)
            report = evaluate(
                truth,
                run,
                protocol=scoring.protocol,
                k=scoring.k,
                normaliser=scoring.normaliser or None,
                ties=scoring.ties,
            )
        except ValueError as error:  # InputError is one
            message = str(error)
            for role in ROLES:  # the file as the user named it, not our scratch path
                message = message.replace(f"{scratch}/{role}/", "")
            raise ValueError(message) from None
    return report, truth


def _release_truth(name: str, queries: Path | None) -> GroundTruth:
    """A release's labels and queries (an uploaded queries file, where given, groups the tables instead); ValueError
    for a release gone or changed on disk."""
    from annotator.facade import BadRelease, ground_truth_files  # the labeling app: only when a release is named

    try:
        labels, release_queries = ground_truth_files(name)
    except BadRelease as bad:
        raise ValueError(str(bad)) from None
    truth = read_qrels(labels, queries or release_queries)
    truth.source = f"release {name}"
    return truth


def _save(scoring: Scoring, report: Report, truth: GroundTruth) -> None:
    group_by = [c for c in ("supercategory", "category", "iconic_group") if any(c in q for q in truth.queries.values())]
    with transaction.atomic():
        locked = Scoring.objects.select_for_update().get(pk=scoring.pk)
        if locked.finished:  # a second run of this task got here first
            return
        saved_run = SavedRun.objects.create(name=scoring.name, file=scoring.run.name, uploaded_by=scoring.uploaded_by)
        saved = SavedReport.objects.create(
            run=saved_run,
            protocol=report.protocol,
            k=report.k,
            ground_truth=scoring.qrels_name or truth.source,
            result=report.as_json(group_by),
        )
        locked.status, locked.report, locked.finished_at = Scoring.Status.DONE, saved, timezone.now()
        locked.save(update_fields=["status", "report", "finished_at"])
