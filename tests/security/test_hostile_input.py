"""Findings 5 and 10: hostile or sloppy parameters get a 400 with a message, never a 500, and change nothing."""

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from annotator.models import Label, Query
from catalog.importers import import_inat
from tests.factories import database_snapshot, inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def api(write_json):
    import_inat(write_json(inat_document(images=5)))
    Query.objects.create(id=7, text="Black Skimmer performing skimming")
    client = APIClient()
    client.force_authenticate(User.objects.create_user("ann"))
    return client


@pytest.mark.parametrize(
    "url",
    [
        "/api/queries/?split=val%00",
        "/api/queries/?status=%00",
        "/api/taxa/?search=sk%00immer",
        "/api/images/?taxon=%00",
        "/api/labels/?value=relevant%00",
        "/api/images/?taxon=%C2%B2",  # a superscript two: isdigit() says yes, int() says no
        "/api/images/?taxon=9517888949870257880692984945573888",
        "/api/labels/?query=9517888949870257880692984945573888",
        "/api/queries/?limit=9517888949870257880692984945573888",
        "/api/queries/?offset=9517888949870257880692984945573888",
        "/api/queries/?split=nonsense",
        "/api/labels/?value=maybe",
        "/queries/7/?taxon=%00",
        "/queries/7/?q=%00",
        "/taxa/suggest?taxon=%00",
    ],
)
def test_hostile_parameters_answer_400(api, client, url):
    client.force_login(User.objects.get(username="ann"))
    caller = client if not url.startswith("/api/") else api
    response = caller.get(url)
    assert response.status_code == 400, (url, response.status_code, response.content[:200])


def test_a_huge_limit_is_cut_to_the_maximum(api):
    body = api.get("/api/queries/?limit=5000").json()
    assert body["count"] == 1 and "results" in body


@pytest.mark.parametrize("image", [1.5, True, "1000.0", None, [1000], {"id": 1000}, 2**63])
def test_a_label_needs_an_image_id_that_is_a_whole_number(api, image):
    before = database_snapshot()
    response = api.post("/api/labels/", {"query": 7, "image": image, "value": "relevant"}, format="json")
    assert response.status_code == 400 and "image" in response.json()
    assert database_snapshot() == before and not Label.objects.exists()


def test_a_lone_surrogate_in_an_import_is_refused(write_json):
    document = inat_document(images=2)
    document["images"][0]["rights_holder"] = "\ud800"
    before = database_snapshot()
    from catalog.importers import InputError

    with pytest.raises(InputError, match="lone surrogate"):
        import_inat(write_json(document))
    assert database_snapshot() == before


def test_deeply_nested_json_is_refused_before_parsing(tmp_path):
    from catalog.importers import InputError

    path = tmp_path / "deep.json"
    path.write_bytes(b'{"images": ' + b"[" * 100_000 + b"]" * 100_000 + b"}")
    before = database_snapshot()
    with pytest.raises(InputError, match="nested more than 64 levels"):
        import_inat(path)
    assert database_snapshot() == before


def test_a_surrogate_pair_split_across_read_chunks_is_text(tmp_path):
    from catalog.importers.inat import _prescan

    document = b'{"images": [{"rights_holder": "' + b"x" * 20 + b'\\ud83d\\ude00"}]}'
    path = tmp_path / "pair.json"
    path.write_bytes(document)
    for chunk_size in range(8, len(document)):  # every split point, the pair included
        _prescan(path, chunk_size=chunk_size)
    path.write_bytes(document.replace(b"\\ude00", b"xxxxxx"))
    from catalog.importers import InputError

    with pytest.raises(InputError, match="lone surrogate"):
        _prescan(path, chunk_size=16)
