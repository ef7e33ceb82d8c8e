"""Issue 27's remaining 500s and loose answers: each request below answered 500 (or 200) before."""

import base64
import json
import re

import pytest
from django.contrib.auth.models import User
from django.urls import reverse

from annotator.inquire.importers import import_queries
from annotator.models import Query
from catalog.models import Image
from common.api_params import MAX_JSON_DEPTH, json_depth
from common.inputs import InputError
from evaluation.inputs import read_queries
from tests.factories import database_snapshot, signed_in

pytestmark = pytest.mark.django_db

DEEP = b"[" * 100_000 + b"]" * 100_000


@pytest.fixture
def world(write_json, client):
    _, api = signed_in(client, write_json, images=4, query_id=5)
    return {"client": client, "api": api, "image": Image.objects.order_by("pk").first().pk}


def test_json_nested_100000_deep_is_a_400_on_every_json_endpoint(world):
    client, api = world["client"], world["api"]
    before = database_snapshot()
    for url in (reverse("save-label", args=[5]), reverse("submit", args=[5])):
        response = client.post(url, DEEP, content_type="application/json")
        assert response.status_code == 400, url
        assert "levels deep" in response.json()["error"]
    for url in ("/api/labels/", "/api/queries/5/labels/"):
        response = api.post(url, DEEP, content_type="application/json")
        assert response.status_code == 400, url
        assert "levels deep" in response.json()["detail"]
    assert database_snapshot() == before


def test_depth_ignores_brackets_inside_strings():
    assert json_depth(json.dumps({"labels": [{"value": "[" * 1000}]}).encode()) == 3
    assert json_depth(b"[" * (MAX_JSON_DEPTH + 1) + b"]" * (MAX_JSON_DEPTH + 1)) == MAX_JSON_DEPTH + 1


def test_a_huge_invalid_value_is_not_echoed_whole(world):
    huge = "x" * 1_000_000
    page = world["client"].post(
        reverse("save-label", args=[5]),
        {"image": world["image"], "value": huge},
        content_type="application/json",
    )
    api = world["api"].post("/api/labels/", {"query": 5, "image": world["image"], "value": huge}, format="json")
    for response in (page, api):
        assert response.status_code == 400
        assert len(response.content) < 500, response.content[:200]
        assert "1,000,002 characters" in response.content.decode()


def test_a_submit_that_is_not_json_or_names_no_images_is_a_400(world):
    client = world["client"]
    bad = client.post(reverse("submit", args=[5]), b"images=1,2", content_type="application/json")
    assert bad.status_code == 400 and "not valid JSON" in bad.json()["error"]
    empty = client.post(reverse("submit", args=[5]), {}, content_type="application/json")
    assert empty.status_code == 400 and "images is missing" in empty.json()["error"]
    listed = client.post(reverse("submit", args=[5]), [1, 2], content_type="application/json")
    assert listed.status_code == 400 and "JSON object" in listed.json()["error"]


def test_a_forged_api_cursor_is_a_404_not_a_500(world):
    forged = base64.b64encode(b"o=0&r=0&p=abc").decode()
    for url in ("/api/labels/", "/api/images/"):
        response = world["api"].get(url, {"cursor": forged})
        assert response.status_code == 404, url
        assert "Invalid cursor" in response.json()["detail"]


def test_ids_in_other_scripts_digits_are_refused(tmp_path):
    path = tmp_path / "inquire_queries_val.csv"
    path.write_text(
        ",query_id,query_text,supercategory,category,iconic_group\n0,٣٣٣,a heron,Appearance,Species,Birds\n"
    )
    with pytest.raises(InputError, match="ASCII digits \\(0-9\\)"):
        import_queries(path)
    assert not Query.objects.exists()
    with pytest.raises(InputError, match="ASCII digits \\(0-9\\)"):
        read_queries(path)


def test_html_pages_carry_a_content_security_policy_that_refuses_inline_scripts(world):
    client = world["client"]
    for url in ("/", reverse("label", args=[5])):
        policy = client.get(url)["Content-Security-Policy"]
        assert "script-src 'self';" in policy and "frame-ancestors 'none'" in policy, url
        assert "unsafe-inline" not in policy.split("script-src")[1].split(";")[0]
    page = client.get("/").content.decode()
    assert "<script>" not in page and "onchange=" not in page  # what the policy would block
    assert "Content-Security-Policy" not in world["api"].get("/api/queries/")  # JSON: nothing to protect


def test_the_api_docs_load_nothing_from_outside(client):
    """/api/redoc/ loaded Google's fonts (offline: console errors); both docs pages serve everything themselves."""
    user = User.objects.create_user("reader", password="pw-reader-1")
    client.force_login(user)
    for page in ("/api/redoc/", "/api/docs/"):
        html = client.get(page).content.decode()
        loaded = re.findall(r'<(?:link|script|img)[^>]+(?:href|src)="([^"]+)"', html)
        assert loaded and not [url for url in loaded if url.startswith(("http:", "https:", "//"))], (page, loaded)
