"""Releases: a benchmark frozen as a folder of files, never changed afterwards.

`create` writes everything a benchmark publishes into a hidden folder beside the releases, from one snapshot of the
database (REPEATABLE READ on PostgreSQL: every file sees the same labels), writes SHA256SUMS over the files, then
renames the folder into place in one step and records the release (who, when, the hash of SHA256SUMS). Anything
that fails on the way (a full disk, a lost database) removes the hidden folder: no half-written release is left
behind, and no record of one. Later labels, adjudications and deletes change the database, never the folder.

  inquire_queries.csv, inquire_annotations.csv,   as export_inquire writes them (byte for byte for the same state),
  inquire_labels.csv, inquire_judgments.csv,      with the agreement figures and one completeness claim per query
  agreement.json, completeness.json
  qrels.txt                                       TREC qrels (release_files.py says the grades)
  queries.parquet, qrels.parquet,                 the same rows for Parquet readers, with each image's license and
  judgments.parquet, images.parquet               rights holder where the collection knows them
  croissant.json                                  Croissant 1.0 with its Responsible-AI fields (croissant.py)
  README.md                                       a Hugging Face dataset card (release_card.py)
  SHA256SUMS                                      `sha256sum -c SHA256SUMS` checks every file

A release made from the page is a ReleaseJob run by a worker (`run_job`), which holds the job while it works
(common.held: a PostgreSQL advisory lock that ends with the worker's session). Whatever stops the worker (kill -9,
a lost machine, a database restart), beat's reaper (`reap_jobs`, every minute) finds the job held by nobody,
marks it failed with a sentence and removes its hidden folder; the job's steps are stamped from a second session,
so the page moves while the snapshot's transaction is still open. One job per name is in the making at a time
(a partial unique index), and a taken name is refused before any work.
"""

import contextlib
import csv
import hashlib
import json
import os
import re
import shutil
import uuid
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from django.conf import settings
from django.db import DatabaseError, IntegrityError, connection, connections, transaction
from django.utils.timezone import localtime, now

from annotator.completeness.claims import query_claims
from annotator.inquire.exporters import AGREEMENT_FILE, COMPLETENESS_FILE, export_inquire
from annotator.labels import sealed
from annotator.labels.sealed import Writer
from annotator.models import Query, Release, ReleaseJob
from annotator.releases import facts as release_facts
from annotator.releases import files as release_files
from annotator.releases.card import write_card
from annotator.releases.croissant import write_croissant
from annotator.team import costs
from common import background, held

NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
SUMS = "SHA256SUMS"
STEPS = ("the INQUIRE files", "qrels", "Parquet", "Croissant and the card", "checksums")
JOB_KIND = "release"  # common.held's key for a ReleaseJob
UNFINISHED = (ReleaseJob.Status.QUEUED, ReleaseJob.Status.RUNNING)
STOPPED = (
    "Its worker stopped before the release was written (the worker process ended, or its database connection did): "
    "nothing was kept. Make it again."
)


class BadRelease(ValueError):
    """A release that cannot be made or read as asked; the text says what to change. Nothing is written."""


def releases_dir() -> Path:
    return Path(settings.QUIRE_DATA_DIR) / "releases"


def check_name(name: str) -> str:
    """`name` if it can name a release folder; BadRelease saying why not."""
    if not isinstance(name, str) or not NAME.fullmatch(name) or ".." in name:
        shown = repr(name)[:60]
        raise BadRelease(
            f"A release name is 1 to 100 letters, digits, '.', '_' or '-', starting with a letter or digit, with no "
            f"'..' (it names a folder), not {shown}: for example inquire-v1.0."
        )
    if name.split(".")[0].upper() in RESERVED:
        raise BadRelease(
            f"{name} is a name Windows keeps for a device (its folder could not be unpacked there): name the release "
            "otherwise, for example inquire-v1.0."
        )
    return name


# Windows' reserved device names, with or without an extension: a release is a folder researchers download.
RESERVED = {"CON", "PRN", "AUX", "NUL", *(f"COM{n}" for n in range(10)), *(f"LPT{n}" for n in range(10))}


def _free_name(name: str, job_id: int | None = None) -> str:
    """`name` if it can name a new release: well formed, no release has it, and no other job is making one of it
    (`job_id`: the job asking, itself in the making)."""
    name = check_name(name)
    # Names differing only by case are one folder on a case-insensitive disk (macOS, Windows): taken alike.
    if made := Release.objects.filter(name__iexact=name).select_related("created_by").first():
        raise BadRelease(
            f"A release named {made.name} exists (made by {_who(made.created_by)} at {_when(made.created_at)}): a "
            "release never changes; name the new one anew."
        )
    making = ReleaseJob.objects.filter(name__iexact=name, status__in=UNFINISHED).exclude(pk=job_id or 0).first()
    if making is not None:
        raise BadRelease(
            f"A release named {name} is being made (started by {_who(making.started_by)} at "
            f"{_when(making.created_at)}): wait for it on the releases page, or name this one anew."
        )
    if (releases_dir() / name).exists():
        raise BadRelease(f"A release named {name} exists (its folder, without a record: ask an operator).")
    return name


def _who(user: Any) -> str:
    return user.get_username() if user is not None else "a command"


def _when(moment: Any) -> str:
    return localtime(moment).strftime("%Y-%m-%d %H:%M")


def get(name: str) -> Release:
    """The release named `name`; BadRelease naming the known ones if there is none."""
    found = Release.objects.filter(name=name).first()
    if found is None:
        known = ", ".join(Release.objects.order_by("name").values_list("name", flat=True)[:20]) or "none yet"
        raise BadRelease(f"No release named {str(name)[:100]!r}; the releases are: {known}.")
    return found


def ground_truth_files(name: str) -> tuple[Path, Path]:
    """The release's labels CSV (its qrels: relevant, and judged negatives) and queries CSV, for scoring a run
    against it; BadRelease for an unknown release or one whose files changed on disk."""
    release = get(name)
    if changed := verify(release):
        raise BadRelease(f"Release {release.name} was changed on disk ({', '.join(changed)}): not scored against.")
    folder = Path(release.folder)
    return folder / "inquire_labels.csv", folder / "inquire_queries.csv"


def names() -> list[str]:
    """The releases' names, newest first (what a page offers to score against)."""
    return list(Release.objects.order_by("-created_at", "-pk").values_list("name", flat=True))


def selected_queries(query_ids: Iterable[int] | None, splits: Iterable[str] | None) -> list[int]:
    """The ids of the queries a release holds: those given, those of the splits given, else every query."""
    queries = Query.objects.order_by("pk")
    if query_ids:
        wanted = sorted(set(query_ids))
        queries = queries.filter(pk__in=wanted)
        if unknown := sorted(set(wanted) - set(queries.values_list("pk", flat=True))):
            raise BadRelease(f"Unknown query id(s) {', '.join(map(str, unknown[:10]))}.")
    if splits:
        if unknown_splits := sorted(set(splits) - set(Query.Split.values)):
            raise BadRelease(f"Splits are {', '.join(Query.Split.values)}, not {', '.join(unknown_splits)}.")
        queries = queries.filter(split__in=list(splits))
    ids = list(queries.values_list("pk", flat=True))
    if not ids:
        raise BadRelease("The selection holds no query: a release needs at least one. Check --query and --split.")
    if waiting := sealed.sealed_queries(ids):
        named = ", ".join(f"{query_id} ({n} images)" for query_id, n in list(waiting.items())[:5])
        raise BadRelease(
            f"The blind overlap samples of queries {named}{' ...' if len(waiting) > 5 else ''} are still sealed: a "
            "release would publish their single, unconfirmed votes as final labels in files that never change. Open "
            "the samples (their query's admin page), or have an adjudicator decide their images, then make it; or "
            "leave those queries out."
        )
    return ids


def create(
    name: str,
    *,
    query_ids: Iterable[int] | None = None,
    splits: Iterable[str] | None = None,
    notes: str = "",
    user: Writer = None,
    progress: Callable[[int, int], None] | None = None,
    job_id: int | None = None,
) -> Release:
    """Freeze the selected queries as the release `name` (module doc). BadRelease, with nothing left behind, for a
    bad or taken name, an empty selection, or a disk that cannot take the files. `job_id`: the ReleaseJob making
    it (its own name is not taken by itself)."""
    name = _free_name(name, job_id)
    final = releases_dir() / name
    if "\x00" in notes:
        raise BadRelease("The notes hold a NUL byte: give them as plain text.")
    ids = selected_queries(query_ids, splits)
    # A partial folder of this name is an earlier attempt's whose worker was killed (no other maker of this name
    # runs: _free_name): the retry removes it before writing its own.
    remove_partial(name)
    partial = releases_dir() / f".{name}.partial-{uuid.uuid4().hex[:12]}"
    try:
        partial.mkdir(parents=True)
        figures = _write_snapshot(partial, name, ids, progress)
        content_hash = hashlib.sha256((partial / SUMS).read_bytes()).hexdigest()
        os.rename(partial, final)  # one step: the release is there whole, or not at all
    except OSError as error:
        shutil.rmtree(partial, ignore_errors=True)
        if final.exists():  # another process renamed its folder into place first
            raise BadRelease(f"A release named {name} exists already: name the new one anew.") from None
        # Never the server's paths: the operating system's reason alone (a full disk, no permission).
        raise BadRelease(f"Could not write the release's files: {error.strerror or type(error).__name__}.") from None
    except BaseException:
        shutil.rmtree(partial, ignore_errors=True)
        raise
    try:
        return Release.objects.create(
            name=name, folder=str(final), content_hash=content_hash, query_ids=ids, figures=figures, notes=notes,
            created_by=user,
        )  # fmt: skip
    except BaseException:
        shutil.rmtree(final, ignore_errors=True)  # no folder without its record
        raise


# annotator/tasks.py: makes the release of a ReleaseJob (run_job, below).
RELEASE_TASK = "annotator.create_release"


def start_job(name: str, *, query_ids: list[int], splits: list[str], notes: str, user: Writer) -> ReleaseJob:
    """Check what can be checked at once (the name, the selection), then queue the release's making: the page
    answers at once and shows the job's steps. BadRelease, with no job, for what create() would refuse first;
    QueueUnavailable, with the job marked failed and saying so, when the broker cannot take it."""
    name = _free_name(name)
    selected_queries(query_ids, splits)
    try:
        with transaction.atomic():
            job = ReleaseJob.objects.create(name=name, query_ids=query_ids, splits=splits, notes=notes, started_by=user)
    except IntegrityError:  # another request queued one of this name since the check above
        _free_name(name)
        raise
    transaction.on_commit(lambda: _send(job))
    return job


def _send(job: ReleaseJob) -> None:
    try:
        background.submit(RELEASE_TASK, job.pk)
    except background.QueueUnavailable as error:
        ReleaseJob.objects.filter(pk=job.pk, status=ReleaseJob.Status.QUEUED).update(
            status=ReleaseJob.Status.FAILED, error=f"Not started: {error}", finished_at=now()
        )
        raise


def run_job(job_id: int) -> ReleaseJob:
    """Make the release a ReleaseJob asks for, holding the job while it works (the module doc), its steps stamped
    as they pass. A job already finished (a message delivered twice) is left as it is; a second delivery of a
    running one waits for the first to let go, then finds it finished."""
    with held.holding(JOB_KIND, job_id):
        job = ReleaseJob.objects.get(pk=job_id)
        if job.status in (ReleaseJob.Status.DONE, ReleaseJob.Status.FAILED):
            return job
        ReleaseJob.objects.filter(pk=job.pk).update(status=ReleaseJob.Status.RUNNING, total=len(STEPS))
        try:
            release = create(
                job.name, query_ids=job.query_ids or None, splits=job.splits or None, notes=job.notes,
                user=job.started_by, progress=lambda done, total: _stamp(job.pk, done, total), job_id=job.pk,
            )  # fmt: skip
        except BadRelease as bad:
            _finish(job.pk, ReleaseJob.Status.FAILED, error=str(bad))
        except DatabaseError:
            # The database went away under the snapshot: nothing was kept (create() removed the folder). Said now
            # if the database answers again, else by the reaper once it does.
            _finish(job.pk, ReleaseJob.Status.FAILED, error=f"The database stopped answering. {STOPPED}")
            raise
        except Exception as error:
            _finish(job.pk, ReleaseJob.Status.FAILED, error=f"{type(error).__name__}: {str(error)[:300]}. {STOPPED}")
            raise
        else:
            _finish(job.pk, ReleaseJob.Status.DONE, release=release, done=len(STEPS))
    job.refresh_from_db()
    return job


def _finish(job_id: int, status: str, **fields: Any) -> None:
    with contextlib.suppress(DatabaseError):  # the database is away: the reaper says it once it answers
        ReleaseJob.objects.filter(pk=job_id, status=ReleaseJob.Status.RUNNING).update(
            status=status, finished_at=now(), **fields
        )


def _stamp(job_id: int, done: int, total: int) -> None:
    """A step of the job, seen by the page at once: from a second session where this one is inside the snapshot's
    transaction (whose writes nobody else sees until it ends)."""
    if not (connection.in_atomic_block and connection.vendor == "postgresql"):
        ReleaseJob.objects.filter(pk=job_id).update(done=done, total=total)
        return
    other = connections.create_connection("default")
    try:
        with other.cursor() as cursor:
            cursor.execute(
                f"UPDATE {ReleaseJob._meta.db_table} SET done = %s, total = %s WHERE id = %s",  # a model's table
                [done, total, job_id],
            )
    finally:
        other.close()


def reap_jobs() -> list[int]:
    """Beat's reaper (every minute): each running job that no live worker holds is marked failed with STOPPED and its
    hidden folder removed. The ids it failed."""
    reaped = []
    for job in held.orphans(JOB_KIND, ReleaseJob.objects.filter(status=ReleaseJob.Status.RUNNING)):
        if ReleaseJob.objects.filter(pk=job.pk, status=ReleaseJob.Status.RUNNING).update(
            status=ReleaseJob.Status.FAILED, error=STOPPED, finished_at=now()
        ):
            remove_partial(job.name)
            reaped.append(job.pk)
    # A partial folder of a job that ended (a killed attempt whose retry finished) is nobody's now. One without a
    # job is left alone: `manage.py release create` may be writing it.
    making = set(ReleaseJob.objects.filter(status__in=UNFINISHED).values_list("name", flat=True))
    for partial in releases_dir().glob(".*.partial-*"):
        name = partial.name[1:].rsplit(".partial-", 1)[0]
        if name not in making and ReleaseJob.objects.filter(name=name).exists():
            shutil.rmtree(partial, ignore_errors=True)
    return reaped


def remove_partial(name: str) -> None:
    """The hidden folders of a release of `name` that was never renamed into place."""
    for partial in releases_dir().glob(f".{name}.partial-*"):
        shutil.rmtree(partial, ignore_errors=True)


def _write_snapshot(
    folder: Path, name: str, ids: list[int], progress: Callable[[int, int], None] | None
) -> dict[str, Any]:
    """Every file of the release into `folder`, read from one snapshot of the database."""
    outermost = not connection.in_atomic_block  # inside a caller's transaction, its snapshot rules
    with transaction.atomic():
        if outermost and connection.vendor == "postgresql":  # one snapshot for every file: the transaction's first
            with connection.cursor() as cursor:  # statement
                cursor.execute("SET TRANSACTION ISOLATION LEVEL REPEATABLE READ")
        rows = export_inquire(folder, ids)
        _step(progress, 1)
        rows |= release_files.write_qrels(folder / release_files.QRELS, ids)
        _step(progress, 2)
        rows |= release_files.write_parquet(folder, ids)
        team = costs.report(ids, dawid_skene=False)  # the same snapshot: what making these labels cost
        _step(progress, 3)
    version = next_version()
    described = release_facts.facts(folder, name, version=version, team=team)
    write_croissant(folder, name, described)
    write_card(folder, described, rows)
    _step(progress, 4)
    release_files.write_sums(folder, SUMS)
    _step(progress, 5)
    claims = query_claims(json.loads((folder / COMPLETENESS_FILE).read_text(encoding="utf-8")))
    return {
        "version": version,
        "rows": rows,
        "queries": len(ids),
        "labels": rows.get(release_files.QRELS, 0),
        "certified": sum(1 for claim in claims if claim["status"] == "certified"),
    }


def next_version() -> str:
    """The version a new release publishes (its croissant.json's and card's): one major version past every release
    kept, so that it never repeats one, even after a release was deleted (a count would: issue 65). A release made
    before versions were recorded counts as its place among the releases."""
    kept = list(Release.objects.order_by("created_at", "pk").values_list("figures", flat=True))
    majors = [_major(figures) or place for place, figures in enumerate(kept, start=1)]
    return f"{max(majors, default=0) + 1}.0.0"


def _major(figures: Any) -> int:
    version = figures.get("version", "") if isinstance(figures, dict) else ""
    head = str(version).split(".", 1)[0]
    return int(head) if head.isdigit() else 0


def _step(progress: Callable[[int, int], None] | None, done: int) -> None:
    if progress:
        progress(done, len(STEPS))


def verify(release: Release) -> list[str]:
    """The files of `release` whose checksum no longer matches SHA256SUMS (or that are missing); [] when intact."""
    folder = Path(release.folder)
    sums = folder / SUMS
    if not sums.is_file() or hashlib.sha256(sums.read_bytes()).hexdigest() != release.content_hash:
        return [SUMS]
    return release_files.mismatches(folder, sums)


def diff(first: Release, second: Release) -> dict[str, Any]:
    """What changed from `first` to `second`: queries added and removed, images whose final label changed (with
    both values, or "" where one release has none), and the agreement and completeness figures side by side."""
    before, after = _labels(first), _labels(second)
    changed = [
        {"query_id": query_id, "image_id": image_id, "before": before.get(key, ""), "after": after.get(key, "")}
        for key in sorted(set(before) | set(after))
        for query_id, image_id in [key]
        if before.get(key, "") != after.get(key, "")
    ]
    queries_before, queries_after = set(first.query_ids), set(second.query_ids)
    return {
        "from": first.name,
        "to": second.name,
        "queries_added": sorted(queries_after - queries_before),
        "queries_removed": sorted(queries_before - queries_after),
        "labels_changed": changed,
        "agreement": {first.name: _overall(first), second.name: _overall(second)},
        "completeness": {first.name: _claims(first), second.name: _claims(second)},
    }


def _labels(release: Release) -> dict[tuple[int, int], str]:
    with (Path(release.folder) / "inquire_labels.csv").open(newline="", encoding="utf-8") as handle:
        return {(int(row["query_id"]), int(row["image_id"])): row["label"] for row in csv.DictReader(handle)}


def _overall(release: Release) -> Any:
    return json.loads((Path(release.folder) / AGREEMENT_FILE).read_text(encoding="utf-8")).get("overall")


def _claims(release: Release) -> dict[str, Any]:
    claims = query_claims(json.loads((Path(release.folder) / COMPLETENESS_FILE).read_text(encoding="utf-8")))
    return {str(c["query_id"]): {"status": c["status"], "bound": c["recall_lower_bound"]} for c in claims}
