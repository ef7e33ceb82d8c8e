"""Finding 4: staff pages follow model permissions, not is_staff alone; locked queries refuse annotators."""

import pytest
from django.contrib.auth.models import Permission, User
from django.urls import reverse

from annotator.models import Query
from tests.factories import database_snapshot

pytestmark = pytest.mark.django_db


def user_with(*codenames, staff=True):
    user = User.objects.create(username="-".join(codenames) or "bare", is_staff=staff)
    user.user_permissions.add(*Permission.objects.filter(codename__in=codenames))
    return User.objects.get(pk=user.pk)  # a fresh object: permissions are cached per instance


@pytest.fixture
def query():
    return Query.objects.create(text="Black Skimmer performing skimming")


def test_a_staff_user_without_permissions_sees_and_changes_nothing(client, query):
    client.force_login(user_with())
    before = database_snapshot()
    assert client.get(reverse("dashboard")).status_code == 403
    assert client.get(reverse("dashboard-query", args=[query.pk])).status_code == 403
    assert (
        client.post(reverse("dashboard-query", args=[query.pk]), {"status": "done", "fully_labeled": "yes"}).status_code
        == 403
    )
    assert client.get(reverse("download-export", args=["inquire_labels.csv"])).status_code == 403
    assert client.get(reverse("evaluation:index")).status_code == 403
    assert database_snapshot() == before
    page = client.get("/").content.decode()
    assert "Dashboard" not in page and "Evaluation" not in page and "inquire_labels.csv" not in page


def test_viewing_labels_is_not_changing_queries(client, query):
    client.force_login(user_with("view_label"))
    assert client.get(reverse("dashboard-query", args=[query.pk])).status_code == 200
    response = client.post(reverse("dashboard-query", args=[query.pk]), {"status": "done", "fully_labeled": "yes"})
    assert response.status_code == 403 and Query.objects.get(pk=query.pk).status == "open"
    client.force_login(user_with("view_label", "change_query"))
    client.post(reverse("dashboard-query", args=[query.pk]), {"status": "done", "fully_labeled": "yes", "locked": "on"})
    query.refresh_from_db()
    assert (query.status, query.locked) == ("done", True)


def test_each_permission_opens_its_own_page(client, query):
    for codename, url in (
        ("export_labels", reverse("download-export", args=["inquire_queries.csv"])),
        ("evaluate_runs", reverse("evaluation:index")),
        ("view_label", reverse("dashboard")),
    ):
        client.force_login(user_with(codename, staff=False))
        assert client.get(url).status_code == 200, codename
