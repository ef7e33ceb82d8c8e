"""`/healthz`, what the containers' healthchecks and a load balancer ask."""

# ruff: noqa: F811  (the Redis fixture, imported from the worker tests, is a parameter here)
import pytest

from search import milvus
from tests.search.test_celery_worker import broker  # noqa: F401

pytestmark = pytest.mark.django_db


def test_healthz_answers_plain_http_under_any_host_without_a_login(client, settings):
    # Production settings: HTTPS redirect on and a host list without the container's own address.
    settings.SECURE_SSL_REDIRECT, settings.ALLOWED_HOSTS = True, ["quire.example.org"]
    response = client.get("/healthz", HTTP_HOST="172.18.0.5:8000")
    assert response.status_code == 200
    assert response.json() == {"status": "ok", "database": "ok", "broker": "embedded"}
    assert response["Cache-Control"] == "no-store"
    assert client.get("/queries/", HTTP_HOST="172.18.0.5:8000").status_code == 400  # only /healthz is exempt


def test_an_unreachable_broker_makes_it_unhealthy(client, settings):
    settings.CELERY_BROKER_URL = "redis://127.0.0.1:1/0"  # nothing listens on port 1
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["broker"].startswith("unreachable (") and response.json()["database"] == "ok"


def test_a_reachable_broker_is_ok(client, settings, broker):
    settings.CELERY_BROKER_URL = broker
    assert client.get("/healthz").json() == {"status": "ok", "database": "ok", "broker": "ok"}


def test_only_get_is_answered(client):
    assert client.post("/healthz").status_code == 405


def test_where_vectors_are_in_milvus_the_vector_database_is_checked_too(client, settings, tmp_path):
    settings.QUIRE_VECTOR_BACKEND = "milvus"
    settings.QUIRE_MILVUS_URI = str(tmp_path / "vectors.db")  # Milvus Lite: answers once opened
    # Opened first, as a web process's first search opens it: starting Milvus Lite's server may take longer than the
    # probe's own short limit under load (CI saw "unreachable (MilvusException)" when the probe started it).
    milvus.connect().close()
    assert client.get("/healthz").json() == {"status": "ok", "database": "ok", "broker": "embedded", "vectors": "ok"}
    settings.QUIRE_MILVUS_URI = "http://127.0.0.1:1"  # nothing listens on port 1
    response = client.get("/healthz")
    assert response.status_code == 503
    assert response.json()["vectors"].startswith("unreachable (") and response.json()["database"] == "ok"
