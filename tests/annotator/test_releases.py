"""Releases (issue 40, first part): a benchmark frozen as files that never change, with qrels, Parquet and
SHA256SUMS; listing, showing and diffing them; every refusal leaving nothing behind."""

import csv
import errno
import hashlib
import io
import json
import subprocess
import sys
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from django.contrib.auth.models import User
from django.core.management import call_command
from django.core.management.base import CommandError
from markdown_it import MarkdownIt

from annotator.inquire.exporters import export_inquire
from annotator.labels import LabelChange, adjudicate, set_labels
from annotator.models import Label, Query, Release, ReleaseJob
from annotator.releases import card as release_card
from annotator.releases import files as release_files
from annotator.releases import publish as releases
from catalog.models import Image
from search.facade import search

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(labeling, settings, tmp_path):
    """Query 1 labeled by Ann and Bob (who disagree on one image), query 2 with no label, in split test."""
    settings.QUIRE_DATA_DIR = tmp_path / "data"
    query, ann = labeling["query"], labeling["annotator"]
    Query.objects.filter(pk=query.pk).update(split="val")
    top = [hit.image_id for hit in search(text=query.text, k=12)]
    set_labels(
        query_id=query.pk,
        changes=[LabelChange(i, "relevant" if n % 4 == 0 else "not_relevant") for n, i in enumerate(top)],
        user=ann,
        source="keyboard",
    )
    bob = User.objects.create_user("bob", password="pw-bob-1")
    set_labels(query_id=query.pk, changes=[LabelChange(top[0], "not_relevant")], user=bob, source="keyboard")
    empty = Query.objects.create(text="a heron with a fish", split="test")
    return {**labeling, "top": top, "bob": bob, "empty": empty}


def rows(path):
    with path.open(newline="", encoding="utf-8") as handle:
        return list(csv.reader(handle))


def test_a_release_holds_the_inquire_files_qrels_parquet_and_checksums(project, tmp_path):
    release = releases.create("v1.0")
    folder = tmp_path / "data" / "releases" / "v1.0"
    assert release.folder == str(folder) and Release.objects.get().name == "v1.0"
    export_inquire(tmp_path / "plain")  # the same state: byte for byte the same CSVs
    for name in ("inquire_queries.csv", "inquire_annotations.csv", "inquire_labels.csv", "inquire_judgments.csv"):
        assert (folder / name).read_bytes() == (tmp_path / "plain" / name).read_bytes(), name
    labels = list(Label.objects.order_by("query_id", "image_id").values_list("query_id", "image_id", "value"))
    qrels = (folder / "qrels.txt").read_text().splitlines()
    assert qrels == [f"{q} 0 {i} {1 if v == 'relevant' else 0}" for q, i, v in labels]
    assert "undecided" in {v for _, _, v in labels}  # Ann and Bob split on one image: graded 0, as INQUIRE does
    assert pq.read_table(folder / "qrels.parquet").num_rows == len(rows(folder / "inquire_labels.csv")) - 1
    assert pq.read_table(folder / "judgments.parquet").num_rows == len(rows(folder / "inquire_judgments.csv")) - 1
    queries = pq.read_table(folder / "queries.parquet").to_pydict()
    assert queries["query_id"] == [project["query"].pk, project["empty"].pk] and queries["split"] == ["val", "test"]
    assert release.content_hash == hashlib.sha256((folder / "SHA256SUMS").read_bytes()).hexdigest()
    checked = subprocess.run(["sha256sum", "-c", "SHA256SUMS"], cwd=folder, capture_output=True, text=True)
    assert checked.returncode == 0 and checked.stdout.count(": OK") == len(list(folder.iterdir())) - 1
    assert releases.verify(release) == []
    assert not [path for path in folder.parent.iterdir() if path.name.startswith(".")]  # no partial folder left


def test_a_release_never_changes_and_diff_shows_what_did(project, tmp_path):
    query, ann, admin, top = project["query"], project["annotator"], project["admin"], project["top"]
    empty = project["empty"].pk
    first = releases.create("v1")
    folder = tmp_path / "data" / "releases" / "v1"
    before = {path.name: path.read_bytes() for path in folder.iterdir()}
    set_labels(query_id=query.pk, changes=[LabelChange(top[1], "relevant")], user=ann, source="keyboard")
    adjudicate(query_id=query.pk, image_id=top[0], value="relevant", user=admin)
    project["empty"].delete()
    assert {path.name: path.read_bytes() for path in folder.iterdir()} == before
    assert releases.verify(first) == []
    second = releases.create("v2")
    found = releases.diff(first, second)
    assert found["queries_removed"] == [empty] and found["queries_added"] == []
    assert found["labels_changed"] == [
        {"query_id": query.pk, "image_id": image_id, "before": old, "after": new}
        for image_id, old, new in sorted([(top[0], "undecided", "relevant"), (top[1], "not_relevant", "relevant")])
    ]
    assert set(found["agreement"]) == {"v1", "v2"}
    assert set(found["completeness"]["v1"]) == {str(query.pk), str(empty)}
    (folder / "qrels.txt").write_text("tampered\n")
    assert releases.verify(first) == ["qrels.txt"]
    with pytest.raises(CommandError, match="changed on disk: qrels.txt"):
        call_command("release", "show", "v1")


def test_the_command_creates_lists_shows_and_diffs(project, capsys, tmp_path):
    notes = tmp_path / "notes.txt"
    notes.write_text("First public version.\n")
    call_command("release", "create", "v1", "--split", "val", "--notes", str(notes))
    out = capsys.readouterr().out
    assert "Release v1:" in out and "qrels.txt: 12 rows" in out and "(1 queries)" in out
    release = Release.objects.get(name="v1")
    assert release.query_ids == [project["query"].pk] and release.notes == "First public version.\n"
    call_command("release", "create", "v2")
    call_command("release", "list")
    listed = capsys.readouterr().out.splitlines()
    assert [line.split()[0] for line in listed[-2:]] == ["v2", "v1"]
    call_command("release", "show", "v1", "--json")
    assert '"intact": true' in capsys.readouterr().out
    call_command("release", "diff", "v1", "v2")
    out = capsys.readouterr().out
    assert f"queries added: [{project['empty'].pk}]" in out
    assert "{" not in out and "'" not in out  # figures side by side, not Python's dict reprs
    agreement = out.split("agreement, overall:\n")[1].split("\n\n")[0].splitlines()
    assert agreement[0].split() == ["figure", "v1", "v2"]
    widths = {len(line) for line in agreement}
    assert len(widths) == 1, "aligned columns: every line as wide"
    claims = out.split("completeness claims:\n")[1].splitlines()
    assert claims[0].split() == ["query", "v1", "v2"] and f"query {project['query'].pk}" in claims[1]


@pytest.mark.parametrize(
    ("arguments", "words"),
    [
        (["create", "a/b"], "names a folder"),
        (["create", ".."], "names a folder"),
        (["create", "v..1"], "names a folder"),
        (["create", "x" * 101], "names a folder"),
        (["create", "v1", "--query", "424242"], "Unknown query"),
        (["create", "v1", "--split", "other"], "no query"),
        (["create", "v1", "--split", "nonsense"], "Splits are"),
        (["show", "nope"], "No release named 'nope'"),
        (["diff", "nope", "nada"], "No release named"),
    ],
)
def test_bad_input_says_what_to_fix_and_leaves_nothing(project, tmp_path, arguments, words):
    with pytest.raises(CommandError, match=words):
        call_command("release", *arguments)
    assert not Release.objects.exists()
    assert not (tmp_path / "data" / "releases").exists() or not list((tmp_path / "data" / "releases").iterdir())


def test_a_name_taken_and_a_disk_that_fills_are_refused_with_nothing_half_written(project, tmp_path, monkeypatch):
    releases.create("v1")
    with pytest.raises(releases.BadRelease, match=r"A release named v1 exists \(made by a command at 20\d\d-"):
        releases.create("v1")

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(release_files, "write_parquet", full)
    with pytest.raises(releases.BadRelease, match="No space left on device") as refused:
        releases.create("v2")
    assert str(tmp_path) not in str(refused.value)  # never the server's paths
    assert list(Release.objects.values_list("name", flat=True)) == ["v1"]
    assert sorted(path.name for path in (tmp_path / "data" / "releases").iterdir()) == ["v1"]


def test_scoring_against_a_release_equals_scoring_against_its_qrels_file(project, tmp_path):
    query = project["query"]
    releases.create("v1")
    run = tmp_path / "run.csv"
    ranked = [hit.image_id for hit in search(text=query.text, k=30)][::-1]  # a run that is not the text order
    run.write_text("query_id,image_id,score\n" + "".join(f"{query.pk},{i},{30 - n}\n" for n, i in enumerate(ranked)))
    set_labels(query_id=query.pk, changes=[LabelChange(ranked[0], "relevant")], user=project["bob"], source="api")
    folder = tmp_path / "data" / "releases" / "v1"

    def scored(*arguments):
        out = tmp_path / f"report-{len(list(tmp_path.glob('report-*')))}.json"
        call_command("evaluate", *arguments, "--run", str(run), "--json", str(out))
        report = json.loads(out.read_text())
        return report, json.dumps({k: v for k, v in report.items() if k not in ("ground_truth", "source")})

    release_report, against_release = scored("--release", "v1")
    _, against_file = scored(
        "--qrels", str(folder / "inquire_labels.csv"), "--queries", str(folder / "inquire_queries.csv")
    )
    _, against_database = scored()  # the database moved on since the release: Bob found one more positive
    assert against_release == against_file != against_database
    assert "release v1" in json.dumps(release_report)  # the figure names the qrels it used
    printed = io.StringIO()
    call_command("evaluate", "--release", "v1", "--run", str(run), stdout=printed)
    assert "against release v1" in printed.getvalue().splitlines()[0]  # and so does the printed report
    (folder / "qrels.txt").write_text("tampered\n")
    with pytest.raises(CommandError, match="changed on disk"):
        call_command("evaluate", "--release", "v1", "--run", str(run))
    with pytest.raises(CommandError, match="No release named"):
        call_command("evaluate", "--release", "v9", "--run", str(run))
    with pytest.raises(CommandError, match="not both"):
        call_command("evaluate", "--release", "v1", "--qrels", str(folder / "inquire_labels.csv"), "--run", str(run))


@pytest.mark.django_db(transaction=True)  # the scoring runs in a background thread, on its own connection
def test_the_evaluation_page_scores_an_upload_against_a_release_as_the_command_does(project, tmp_path, client):
    from django.core.files.uploadedfile import SimpleUploadedFile

    from common import background
    from evaluation.models import SavedReport, Scoring

    query = project["query"]
    releases.create("v1")
    ranked = [hit.image_id for hit in search(text=query.text, k=30)][::-1]
    run = "query_id,image_id,score\n" + "".join(f"{query.pk},{i},{30 - n}\n" for n, i in enumerate(ranked))
    (tmp_path / "run.csv").write_text(run)
    set_labels(query_id=query.pk, changes=[LabelChange(ranked[0], "relevant")], user=project["bob"], source="api")
    out = tmp_path / "command.json"
    call_command("evaluate", "--release", "v1", "--run", str(tmp_path / "run.csv"), "--json", str(out))
    by_command = json.loads(out.read_text())

    client.force_login(project["admin"])
    form = client.get("/evaluation/").content.decode()
    assert '<option value="v1">release v1</option>' in form
    answer = client.post("/evaluation/", {"name": "reversed", "protocol": "fullrank", "release": "v1",
                                          "run": SimpleUploadedFile("run.csv", run.encode())})  # fmt: skip
    assert answer.status_code == 202
    background.wait_for_all(timeout=120)
    saved = SavedReport.objects.get(run__name="reversed")
    assert saved.ground_truth == "release v1"
    assert saved.result["overall"] == by_command["overall"]  # the release's labels, not the database's newer ones
    assert "release v1" in client.get(f"/evaluation/reports/{saved.pk}/").content.decode()
    both = client.post("/evaluation/", {"name": "x", "protocol": "fullrank", "release": "v1",
                                        "run": SimpleUploadedFile("run.csv", run.encode()),
                                        "qrels": SimpleUploadedFile("q.csv", b"query_id,image_id\n1,1\n")})  # fmt: skip
    assert both.status_code == 400 and "a release or an uploaded qrels file, not both" in both.content.decode()
    unknown = client.post("/evaluation/", {"name": "y", "protocol": "fullrank", "release": "v9",
                                           "run": SimpleUploadedFile("run.csv", run.encode())})  # fmt: skip
    assert unknown.status_code == 400 and Scoring.objects.count() == 1


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib's, inside mlcroissant's JSON-LD parser
def test_the_croissant_file_passes_the_validators_checks_and_the_card_and_parquet_load(project, tmp_path, monkeypatch):
    """NeurIPS' validator: the JSON parses, mlcroissant loads it, and every RecordSet's records are generated; the
    RAI fields are there, filled from the project or marked for the authors. The card parses with huggingface_hub,
    and datasets loads each Parquet config offline with the CSVs' row counts."""
    import datasets
    import mlcroissant as mlc
    from huggingface_hub import DatasetCard

    releases.create("v1")
    folder = tmp_path / "data" / "releases" / "v1"
    document = json.loads((folder / "croissant.json").read_text())  # (1) it parses
    validated = subprocess.run(
        [str(Path(sys.executable).with_name("mlcroissant")), "validate", "--jsonld", str(folder / "croissant.json")],
        capture_output=True,
        text=True,
    )
    assert validated.returncode == 0, validated.stderr  # (2) mlcroissant loads it, no error
    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    labels = rows(folder / "inquire_labels.csv")[1:]
    counts = {name: len(list(dataset.records(name))) for name in ("queries", "qrels", "images")}  # (3) records
    assert counts == {"queries": 2, "qrels": len(labels), "images": len({row[1] for row in labels})}
    sums = dict(line.split("  ")[::-1] for line in (folder / "SHA256SUMS").read_text().splitlines())
    for item in document["distribution"]:
        assert item["sha256"] == sums[item["contentUrl"]], item["contentUrl"]
    rai = {key.split(":", 1)[1]: value for key, value in document.items() if key.startswith("rai:")}
    assert "Quire" in json.dumps(rai["dataAnnotationPlatform"])
    assert "completeness check" in json.dumps(rai["dataAnnotationProtocol"])
    assert "0 of 2 queries carry a certified claim" in json.dumps(rai["dataAnnotationProtocol"])
    assert "judgments per image" in rai["annotationsPerItem"] and "1 to 2" in rai["annotationsPerItem"]
    assert all("TO DO (authors)" in json.dumps(rai[key]) for key in ("dataBiases", "personalSensitiveInformation"))

    card = DatasetCard.load(folder / "README.md")
    assert card.data.license == "other" and [c["config_name"] for c in card.data.configs][0] == "qrels"
    assert "## Annotations" in card.text and "TO DO" in card.text
    # The file table is one table as the hub's GitHub-flavoured Markdown reads it: a row per file, under its header.
    tokens = MarkdownIt("commonmark").enable("table").parse(card.text)
    assert sum(token.type == "table_open" for token in tokens) == 1
    body = [token.type for token in tokens].index("tbody_open"), [token.type for token in tokens].index("tbody_close")
    cells = [token.content for token in tokens[body[0] : body[1]] if token.type == "inline"]
    table = [cells[n : n + 3] for n in range(0, len(cells), 3)]
    assert [row[0] for row in table] == [f"`{name}`" for name, _ in release_card._FILES]
    assert dict((row[0], row[1]) for row in table)["`qrels.parquet`"] == str(len(labels))
    assert sum(token.type == "bullet_list_open" for token in tokens) == 5  # each list one list
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    for config, csv_name in [("qrels", "inquire_labels.csv"), ("judgments", "inquire_judgments.csv")]:
        loaded = datasets.load_dataset(
            "parquet", data_files=str(folder / f"{config}.parquet"), cache_dir=str(tmp_path / "hf"), split="train"
        )
        assert loaded.num_rows == len(rows(folder / csv_name)) - 1, config


@pytest.mark.django_db(transaction=True)
def test_the_releases_page_makes_one_in_the_background_lists_it_serves_its_files_and_compares(project, client):
    from common import background

    client.force_login(project["admin"])
    page = client.get("/releases/")
    assert page.status_code == 200 and "No release yet." in page.content.decode()
    answer = client.post("/releases/", {"name": "v1", "queries": "", "notes": "first"})
    assert answer.status_code == 302
    background.wait_for_all(timeout=120)
    job = ReleaseJob.objects.get()
    assert (job.status, job.done, job.total, job.release.name) == ("done", 5, 5, "v1")
    page = client.get("/releases/").content.decode()
    assert 'data-release="v1"' in page and ">12<" in page and "first" in page
    folder = Path(releases.get("v1").folder)
    every = sorted(path.name for path in folder.iterdir())
    assert len(every) > 6 and all(f'href="/releases/v1/{name}"' in page for name in every)  # issue 64: 6 linked
    assert all(f'href="/releases/v1/{name}?download=1"' in page for name in every)
    card = client.get("/releases/v1/README.md?download=1")
    assert card.status_code == 200 and b"".join(card.streaming_content).startswith(b"---\nlicense: other")
    assert card["Content-Disposition"].startswith("attachment")
    shown = client.get("/releases/v1/README.md")  # the card rendered, its YAML header as a block
    assert shown.status_code == 200 and shown["Content-Type"].startswith("text/html")
    html = shown.content.decode()
    assert '<code class="language-yaml">license: other' in html and "<h1>" in html and "<table>" in html
    croissant = client.get("/releases/v1/croissant.json")
    assert croissant["Content-Type"] == "application/json; charset=utf-8"
    assert croissant["Content-Disposition"].startswith("inline")
    assert json.loads(b"".join(croissant.streaming_content))["@type"] == "sc:Dataset"
    parquet = next(name for name in every if name.endswith(".parquet"))
    assert client.get(f"/releases/v1/{parquet}")["Content-Disposition"].startswith("attachment")
    assert client.get("/releases/v1/nothing.txt").status_code == 404
    assert client.get("/releases/v1/..%2Fv1%2FREADME.md").status_code == 404
    assert client.get("/releases/v9/README.md").status_code == 404
    set_labels(
        query_id=project["query"].pk,
        changes=[LabelChange(project["top"][1], "relevant")],
        user=project["bob"],
        source="api",
    )
    releases.create("v2")
    compared = client.get("/releases/", {"from": "v1", "to": "v2"}).content.decode()
    assert 'id="release-diff"' in compared and "<strong>1</strong> final labels changed" in compared
    for bad, words in [({"name": "v1"}, "exists (made by boss at "), ({"name": "../x"}, "names a folder"),
                       ({"name": "v3", "queries": "1; DROP"}, "query ids separated by commas"),
                       ({"name": "v3", "split": "other"}, "no query")]:  # fmt: skip
        refused = client.post("/releases/", bad)
        assert refused.status_code == 400 and words in refused.content.decode(), bad
    assert ReleaseJob.objects.count() == 1 and Release.objects.count() == 2
    client.force_login(project["annotator"])  # no permission to see releases
    assert client.get("/releases/").status_code == 403


@pytest.mark.filterwarnings("ignore::DeprecationWarning")  # rdflib's, inside mlcroissant's JSON-LD parser
def test_a_release_of_the_demo_passes_the_validators_checks(settings, tmp_path, monkeypatch, capsys):
    """The demo's project (its collection, queries and users), labeled a little by its annotator: its release's
    croissant.json validates and every RecordSet's records are generated, as many as the Parquet files hold."""
    import mlcroissant as mlc

    settings.QUIRE_DATA_DIR = tmp_path
    call_command("demo", "--no-serve", "--images", "40")
    capsys.readouterr()
    annotator = User.objects.get(username="annotator")
    images = list(Image.objects.order_by("pk").values_list("pk", flat=True))
    for n, query in enumerate(Query.objects.all()[:3]):
        hits = images[10 * n : 10 * n + 10]
        changes = [LabelChange(i, "relevant" if n < 2 else "not_relevant") for n, i in enumerate(hits)]
        set_labels(query_id=query.pk, changes=changes, user=annotator, source="keyboard")
    recorded = json.loads((tmp_path / "settings.json").read_text())  # what a new process after the demo reads
    settings.QUIRE_CLIP_MODEL, settings.QUIRE_CLIP_PRETRAINED = (
        recorded.get("QUIRE_CLIP_MODEL", ""),
        recorded["QUIRE_CLIP_PRETRAINED"],
    )
    call_command("release", "create", "demo-v1")
    folder = tmp_path / "releases" / "demo-v1"
    # Issue 64: no path of this machine, the stand-in said to be random, and the judgments per image as they are.
    document = json.loads((folder / "croissant.json").read_text())
    tools = json.dumps(document["rai:machineAnnotationTools"])
    assert str(tmp_path) not in tools and "local-dir" not in tools and "ViT-H" not in tools
    assert "random weights, so its rankings meant nothing" in tools
    assert document["rai:annotationsPerItem"].startswith("1 judgment per image; 0 of 30 judged images")
    validated = subprocess.run(
        [str(Path(sys.executable).with_name("mlcroissant")), "validate", "--jsonld", str(folder / "croissant.json")],
        capture_output=True,
        text=True,
    )
    assert validated.returncode == 0, validated.stderr
    dataset = mlc.Dataset(jsonld=str(folder / "croissant.json"))
    for name in ("queries", "qrels", "images"):
        assert sum(1 for _ in dataset.records(name)) == pq.read_table(folder / f"{name}.parquet").num_rows, name
    assert pq.read_table(folder / "qrels.parquet").num_rows == 30


class _Killed(BaseException):
    """A worker killed mid-run: no handler of the job's own runs (kill -9 runs none)."""


def test_a_second_release_of_a_name_is_refused_up_front_while_the_first_is_made(
    project, monkeypatch, django_capture_on_commit_callbacks
):
    from common import background

    sent = []
    monkeypatch.setattr(background, "submit", lambda task, *args: sent.append(args))
    with django_capture_on_commit_callbacks(execute=True):
        first = releases.start_job("v1", query_ids=[], splits=[], notes="", user=project["admin"])
    with pytest.raises(releases.BadRelease, match=r"A release named v1 is being made \(started by boss at "):
        releases.start_job("v1", query_ids=[], splits=[], notes="", user=project["bob"])
    assert ReleaseJob.objects.count() == 1 and sent == [(first.pk,)]
    # The database refuses it too, whatever path skips the check (a second page racing the first).
    from django.db import IntegrityError, transaction

    with pytest.raises(IntegrityError), transaction.atomic():
        ReleaseJob.objects.create(name="v1")


def test_a_release_the_broker_cannot_take_says_so_and_is_not_left_queued(
    project, monkeypatch, django_capture_on_commit_callbacks
):
    from common import background

    def away(task, *args):
        raise background.QueueUnavailable("The job was not started: the queue (Redis) did not answer.")

    monkeypatch.setattr(background, "submit", away)
    with pytest.raises(background.QueueUnavailable), django_capture_on_commit_callbacks(execute=True):
        releases.start_job("v1", query_ids=[], splits=[], notes="", user=project["admin"])
    job = ReleaseJob.objects.get()
    assert job.status == "failed" and job.error.startswith("Not started: The job was not started")
    monkeypatch.undo()
    assert releases.start_job("v1", query_ids=[], splits=[], notes="", user=project["admin"]).status == "queued"


def test_a_release_whose_worker_is_killed_is_failed_by_the_reaper_with_nothing_left(
    project, tmp_path, monkeypatch, django_capture_on_commit_callbacks
):
    from common import background

    monkeypatch.setattr(background, "submit", lambda task, *args: None)
    job = releases.start_job("v1", query_ids=[], splits=[], notes="", user=project["admin"])
    steps = []

    def killed_at_step_three(progress, done):
        steps.append(done)
        if done == 3:
            raise _Killed

    monkeypatch.setattr(releases, "_step", killed_at_step_three)
    monkeypatch.setattr(releases.shutil, "rmtree", lambda *a, **k: None)  # kill -9 cleans nothing up
    with pytest.raises(_Killed):
        releases.run_job(job.pk)
    monkeypatch.undo()
    job.refresh_from_db()
    folder = tmp_path / "data" / "releases"
    assert job.status == "running" and steps == [1, 2, 3] and [p.name for p in folder.iterdir()][0].startswith(".v1.")

    assert releases.reap_jobs() == [job.pk]
    job.refresh_from_db()
    assert job.status == "failed" and job.error == releases.STOPPED and job.finished_at is not None
    assert list(folder.iterdir()) == [] and not Release.objects.exists()
    assert releases.reap_jobs() == []
    # The name is free again, and the page's next release is made whole.
    monkeypatch.setattr(background, "submit", lambda task, *args: releases.run_job(*args))
    with django_capture_on_commit_callbacks(execute=True):
        again = releases.start_job("v1", query_ids=[], splits=[], notes="", user=project["admin"])
    again.refresh_from_db()
    assert again.status == "done" and again.release.name == "v1"


def test_the_reaper_leaves_a_job_a_live_worker_holds(project):
    from common import held

    job = ReleaseJob.objects.create(name="v1", status="running")
    with held.holding(releases.JOB_KIND, job.pk):
        assert releases.reap_jobs() == []
    job.refresh_from_db()
    assert job.status == "running"
    assert releases.reap_jobs() == [job.pk]


@pytest.mark.parametrize("name", ["con", "NUL.txt", "com1", "Lpt9.v1"])
def test_a_windows_device_name_is_refused(project, name):
    with pytest.raises(releases.BadRelease, match="Windows keeps for a device"):
        releases.create(name)
    assert not Release.objects.exists()


def test_a_name_differing_only_by_case_is_taken(project):
    releases.create("r1")
    with pytest.raises(releases.BadRelease, match="A release named r1 exists"):
        releases.create("R1")
    with pytest.raises(releases.BadRelease, match="A release named r1 exists"):
        releases.start_job("R1", query_ids=[], splits=[], notes="", user=None)
    assert list(Release.objects.values_list("name", flat=True)) == ["r1"]


def test_a_release_waits_for_a_sealed_overlap_sample_and_is_made_once_it_is_opened(project):
    """Issue 63: a release publishes final labels for good; with an overlap sample sealed it would publish the single
    votes its second judges have not given yet. Refused, naming the query; made once staff open the sample."""
    from annotator.team.overlap import draw_sample, open_sample

    query = Query.objects.get(split="val")
    draw_sample(query, fraction=0.5)
    with pytest.raises(releases.BadRelease, match=rf"overlap samples of queries {query.pk} \(6 images\) are still"):
        releases.create("v1")
    with pytest.raises(releases.BadRelease, match="still sealed"):
        releases.start_job("v1", query_ids=[], splits=[], notes="", user=None)
    assert not Release.objects.exists() and not ReleaseJob.objects.exists()
    bob = User.objects.get(username="bob")
    sealed_images = Query.objects.get(pk=query.pk).overlap.values_list("image_id", flat=True)
    set_labels(
        query_id=query.pk, changes=[LabelChange(i, "relevant") for i in sealed_images], user=bob, source="keyboard"
    )
    open_sample(query)
    assert releases.create("v1").name == "v1"


def test_a_card_is_shown_with_hostile_text_escaped():
    """The releases page renders a card (issue 64); a query's text is written into it as typed, so raw HTML and
    script links in it are shown as text, never run."""
    card = (
        "---\nlicense: other\n---\n# Card\n\n| query | text |\n|---|---|\n| 1 | <script>alert(1)</script> |\n\n"
        '<img src=x onerror="alert(2)"> [a link](javascript:alert(3)) and\x00 a NUL\n'
    )
    html = release_card.as_html(card)
    assert "<script>" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "<img" not in html and 'href="javascript:' not in html
    assert '<code class="language-yaml">license: other' in html and "<table>" in html and "<h1>Card</h1>" in html


def test_a_release_version_never_repeats_after_a_deletion(project):
    """Issue 65: a release's version was the count of releases + 1, so deleting one made the next repeat a version a
    release kept still has."""
    for name in ("v1", "v2"):
        releases.create(name)
    assert [r.figures["version"] for r in Release.objects.order_by("pk")] == ["1.0.0", "2.0.0"]
    Release.objects.filter(name="v1").delete()
    third = releases.create("v3")
    assert third.figures["version"] == "3.0.0"  # a count would have said 2.0.0, v2's
    croissant = json.loads((Path(third.folder) / "croissant.json").read_text(encoding="utf-8"))
    assert croissant["version"] == "3.0.0"
    Release.objects.filter(name="v2").update(figures={"queries": 1})  # made before versions were recorded
    assert releases.next_version() == "4.0.0"
