import re
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from common import background
from evaluation import forms
from evaluation.models import SavedReport, SavedRun, Scoring

from .test_evaluate import QRELS, QUERIES

# transaction=True: the scoring runs in a background thread, on its own database connection.
pytestmark = pytest.mark.django_db(transaction=True)

RUN_A = "query_id,image_id,score\n1,10,3\n1,11,2\n2,20,1\n"
RUN_B = "query_id,image_id,score\n1,99,3\n1,10,2\n2,98,1\n"


@pytest.fixture
def staff(client):
    client.force_login(get_user_model().objects.create_superuser("boss", "b@example.org", "pw"))
    return client


def upload(client, name, run, **extra):
    data = {
        "name": name,
        "protocol": "fullrank",
        "k": 50,
        "normaliser": "",
        "run": SimpleUploadedFile("run.csv", run.encode()),
        "qrels": SimpleUploadedFile("qrels.csv", QRELS.encode()),
        "queries": SimpleUploadedFile("queries.csv", QUERIES.encode()),
        **extra,
    }
    return scored(client, client.post("/evaluation/", data))


def scored(client, response):
    """The upload answers 202 at once; wait for the background scoring and open what it made: the
    report when it scored, the status page (with the error) when it did not."""
    if response.status_code != 202:  # refused before anything was stored
        assert response.status_code == 400
        return response
    background.wait_for_all(timeout=120)
    status = client.get(response["Content-Location"])
    job = Scoring.objects.get(pk=status.context["job"].pk)
    assert job.finished, job.status
    return client.get(f"/evaluation/reports/{job.report_id}/") if job.report_id else status


def test_upload_score_see_tables_download_and_compare(staff):
    page = upload(staff, "run A", RUN_A).content.decode()
    a = SavedReport.objects.get(run__name="run A")
    assert 'id="no-comparison"' in page and 'name="compare"' not in page  # nothing to compare with yet
    assert "By supercategory" in page and "<svg" in page
    assert "tied scores averaged (scikit-learn, as INQUIRE)" in page and "AP normaliser min" in page
    assert a.result["overall"]["ap"] == pytest.approx((1.0 + 1.0 + 0.0) / 3)
    assert re.search(r"<th>overall</th><td class=\"num\">66\.7</td>", page)
    upload(staff, "run B", RUN_B)
    b = SavedReport.objects.get(run__name="run B")
    compared = staff.get(f"/evaluation/reports/{a.pk}/", {"compare": b.pk}).content.decode()
    assert "better on 66.7% and worse on 0.0% of 3 queries" in compared and "<circle" in compared
    assert staff.get(f"/evaluation/reports/{a.pk}/download.json").json()["protocol"] == "fullrank"
    assert staff.get(f"/evaluation/reports/{a.pk}/download.csv").content.decode().startswith("query_id,R,retrieved,ap")
    assert staff.get(f"/evaluation/reports/{a.pk}/download.exe").status_code == 404
    assert SavedRun.objects.get(name="run A").file.read().decode() == RUN_A


def test_a_bad_run_says_which_line_and_saves_nothing(staff):
    page = upload(staff, "broken", "query_id,image_id,score\n1,10,3\n1,10,2\n").content.decode()
    assert page.count("run.csv, line 3: query 1, image 10 is already ranked on line 2") == 1  # said once
    assert not SavedRun.objects.exists() and not SavedReport.objects.exists()
    job = Scoring.objects.get()
    assert job.status == Scoring.Status.FAILED and not job.run and not job.qrels  # the files are not kept


def test_the_upload_answers_at_once_and_the_status_page_polls_until_the_report(staff):
    """The POST only stores the files: 202 with a status page that htmx polls; the poll that finds the
    report ready sends the browser there (HX-Redirect)."""
    response = staff.post(
        "/evaluation/",
        {
            "name": "run A",
            "protocol": "fullrank",
            "k": 50,
            "run": SimpleUploadedFile("run.csv", RUN_A.encode()),
            "qrels": SimpleUploadedFile("qrels.csv", QRELS.encode()),
        },
    )
    job = Scoring.objects.get()
    assert response.status_code == 202 and response["Content-Location"] == f"/evaluation/scorings/{job.pk}/"
    page = response.content.decode()
    assert 'hx-trigger="every 1s"' in page and "run.csv against qrels.csv" in page
    background.wait_for_all(timeout=120)
    poll = staff.get(f"/evaluation/scorings/{job.pk}/", HTTP_HX_REQUEST="true")
    job.refresh_from_db()
    assert (job.status, poll.status_code) == (Scoring.Status.DONE, 200)  # django-htmx's client redirect
    assert poll["HX-Redirect"] == f"/evaluation/reports/{job.report_id}/"
    finished = staff.get(f"/evaluation/scorings/{job.pk}/").content.decode()
    assert "hx-trigger" not in finished and f"/evaluation/reports/{job.report_id}/" in finished  # polling stops


def test_a_scoring_lost_with_its_server_is_sent_again_by_beat_not_by_its_page(staff):
    """Embedded mode: the thread that held a scoring died with its process. The row says queued and no thread
    holds it; the embedded server's beat sends it again (common/beat.py). Opening its page sends nothing: a GET
    only reads (issue 65)."""
    from evaluation.tasks import resume_scorings

    run = SimpleUploadedFile("run.csv", RUN_A.encode())
    job = Scoring.objects.create(name="lost", protocol="fullrank", k=50, run=run, run_name="run.csv")
    (Path(job.qrels.storage.location) / "lost-qrels.csv").write_text(QRELS)
    Scoring.objects.filter(pk=job.pk).update(qrels="lost-qrels.csv", qrels_name="qrels.csv")
    staff.get(f"/evaluation/scorings/{job.pk}/")
    background.wait_for_all(timeout=120)
    job.refresh_from_db()
    assert job.status == Scoring.Status.QUEUED
    assert resume_scorings() == [job.pk]  # beat's task, as the embedded server's beat thread sends it
    background.wait_for_all(timeout=120)
    job.refresh_from_db()
    assert job.status == Scoring.Status.DONE and job.report.result["overall"]["ap"] == pytest.approx(2 / 3)
    assert resume_scorings() == []  # nothing unfinished is left to send


def test_a_huge_upload_is_refused_before_reading(staff, monkeypatch):
    monkeypatch.setattr(forms, "MAX_UPLOAD_BYTES", 10)
    page = upload(staff, "big", RUN_A).content.decode()
    assert "the limit is 0 MB" in page and not SavedRun.objects.exists()


def test_only_staff_see_the_evaluation_pages(client):
    client.force_login(get_user_model().objects.create_user("ann", password="pw", is_staff=True))
    assert client.get("/evaluation/").status_code == 403  # staff alone is not the permission to evaluate


def test_files_uploaded_with_the_same_name_do_not_overwrite_each_other(staff):
    """Finding 6: a run and qrels both named data.csv once scored the run against itself."""
    data = {
        "name": "same names",
        "protocol": "fullrank",
        "k": 50,
        "normaliser": "",
        "run": SimpleUploadedFile("data.csv", RUN_A.encode()),
        "qrels": SimpleUploadedFile("data.csv", QRELS.encode()),
        "queries": SimpleUploadedFile("data.csv", QUERIES.encode()),
    }
    page = scored(staff, staff.post("/evaluation/", data)).content.decode()
    report = SavedReport.objects.get(run__name="same names")
    assert report.result["overall"]["ap"] == pytest.approx((1.0 + 1.0 + 0.0) / 3), page[:500]


def test_a_compare_that_is_not_a_report_id_is_ignored_not_a_500(staff):
    upload(staff, "run A", RUN_A)
    report = SavedReport.objects.get(run__name="run A")
    for value in ("²", "٣", "abc", "9" * 30, ""):
        response = staff.get(f"/evaluation/reports/{report.pk}/", {"compare": value})
        assert response.status_code == 200, value
        assert 'id="no-comparison"' in response.content.decode()


def test_a_file_name_past_255_bytes_is_refused_with_a_sentence(staff):
    data = {"name": "run A", "protocol": "fullrank", "k": 50, "normaliser": ""}
    data["run"] = SimpleUploadedFile("é" * 260 + ".csv", RUN_A.encode())
    data["qrels"] = SimpleUploadedFile("qrels.csv", QRELS.encode())
    response = staff.post("/evaluation/", data)
    assert response.status_code == 400
    assert "bytes long; the limit is 255: rename the file" in response.content.decode()
    assert not Scoring.objects.exists() and not SavedRun.objects.exists()


def test_the_same_upload_form_sent_twice_is_scored_once(staff, monkeypatch):
    """A double click on "Score it" sends the form twice: its submission key makes the second answer the
    first's scoring (before, the run was scored and saved twice)."""
    import uuid

    from evaluation import scoring

    key = str(uuid.uuid4())
    assert 'name="submission" value="' in staff.get("/evaluation/").content.decode()  # each form its own key

    def send():
        return staff.post(
            "/evaluation/",
            {
                "submission": key, "name": "twice?", "protocol": "fullrank", "k": 50, "normaliser": "",
                "run": SimpleUploadedFile("run.csv", RUN_A.encode()),
                "qrels": SimpleUploadedFile("qrels.csv", QRELS.encode()),
            },
        )  # fmt: skip

    first, second = send(), send()
    assert first.status_code == second.status_code == 202
    assert first["Content-Location"] == second["Content-Location"]
    background.wait_for_all(timeout=120)
    assert Scoring.objects.count() == 1 and SavedReport.objects.count() == 1
    # The other submit's INSERT lands between this one's check and its own: the database refuses the second.
    earlier = Scoring.objects.get()
    monkeypatch.setattr(scoring.Scoring.objects, "filter", lambda **_: Scoring.objects.none())
    again = {"submission": uuid.UUID(key), "name": "x", "protocol": "fullrank", "run": None}
    assert scoring.start(again, None) == earlier
    assert Scoring.objects.count() == 1
