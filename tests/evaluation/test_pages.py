import re

import pytest
from django.contrib.auth import get_user_model
from django.core.files.uploadedfile import SimpleUploadedFile

from evaluation import forms
from evaluation.models import SavedReport, SavedRun

from .test_evaluate import QRELS, QUERIES

pytestmark = pytest.mark.django_db

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
    return client.post("/evaluation/", data, follow=True)


def test_upload_score_see_tables_download_and_compare(staff):
    page = upload(staff, "run A", RUN_A).content.decode()
    a = SavedReport.objects.get(run__name="run A")
    assert 'id="no-comparison"' in page and 'name="compare"' not in page  # nothing to compare with yet
    assert "By supercategory" in page and "<svg" in page
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
    page = staff.post("/evaluation/", data, follow=True).content.decode()
    report = SavedReport.objects.get(run__name="same names")
    assert report.result["overall"]["ap"] == pytest.approx((1.0 + 1.0 + 0.0) / 3), page[:500]
