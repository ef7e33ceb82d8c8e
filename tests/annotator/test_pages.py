import pytest
from django.contrib.auth.models import User

from annotator.labels import set_label
from annotator.models import Query
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def project(write_json):
    import_inat(write_json(inat_document(images=4)))
    query = Query.objects.create(text="Black Skimmer performing skimming")
    set_label(query_id=query.id, image_id=1000, value="relevant", source="click")
    set_label(query_id=query.id, image_id=1001, value="not_relevant", source="click")
    return query


def test_home_needs_a_login_and_lists_queries_with_counts(client, project):
    assert client.get("/").status_code == 302
    client.force_login(User.objects.create(username="ann"))
    page = client.get("/").content.decode()
    assert "Black Skimmer performing skimming" in page
    assert "<td>2</td><td>1</td>" in page  # labeled, relevant
    assert "inquire_labels.csv" not in page  # exports are for staff


@pytest.mark.parametrize(
    "model",
    [
        "catalog/taxon",
        "catalog/image",
        "catalog/imageroot",
        "annotator/query",
        "annotator/label",
        "annotator/labelevent",
        "annotator/importbatch",
    ],
)
def test_admin_pages_render_for_every_model(admin_client, project, model):
    assert admin_client.get(f"/admin/{model}/").status_code == 200
    assert admin_client.get(f"/admin/{model}/?q=skimmer%27%3B--").status_code == 200


def test_admin_index_links_the_exports(admin_client, project):
    page = admin_client.get("/admin/").content.decode()
    assert 'href="/exports/inquire_annotations.csv"' in page


def test_history_cannot_be_edited_in_the_admin(admin_client, project):
    from annotator.models import LabelEvent

    event = LabelEvent.objects.first()
    response = admin_client.post(f"/admin/annotator/labelevent/{event.pk}/change/", {"new_value": "unsure"})
    assert response.status_code in (403, 200)
    assert LabelEvent.objects.get(pk=event.pk).new_value == "relevant"
    assert admin_client.post(f"/admin/annotator/labelevent/{event.pk}/delete/", {"post": "yes"}).status_code == 403
