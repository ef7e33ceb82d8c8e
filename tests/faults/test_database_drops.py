"""PostgreSQL connections dropped during saves (issue 27): the save is retried on a new connection and lands
once; when the database stays away the answer is a 503 with a sentence, and nothing is half-written.

The drop is real: a second connection calls pg_terminate_backend() on the request's own server process just
before the label write reaches it, as a PostgreSQL restart or a failover does.
"""

import psycopg
import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.urls import reverse

from annotator.models import Label, LabelEvent, Query
from catalog.importers import import_inat
from catalog.models import Image
from tests.factories import inat_document

pytestmark = [pytest.mark.postgresql, pytest.mark.django_db(transaction=True)]


def _terminate(pid: int) -> None:
    settings = connection.settings_dict
    with psycopg.connect(
        host=settings["HOST"], port=settings["PORT"] or 5432, user=settings["USER"], password=settings["PASSWORD"],
        dbname=settings["NAME"], autocommit=True,
    ) as other:  # fmt: skip
        other.execute("SELECT pg_terminate_backend(%s)", [pid])


class DropBeforeLabelWrites:
    """A database execute wrapper: before the first `times` statements that touch annotator_label, the
    connection's server process is terminated, so the statement meets a dead connection."""

    def __init__(self, times: int):
        self.left = times

    def __call__(self, execute, sql, params, many, context):
        if self.left and "annotator_label" in sql:
            self.left -= 1
            with context["connection"].cursor() as cursor:
                cursor.execute("SELECT pg_backend_pid()")
                pid = cursor.fetchone()[0]
            _terminate(pid)
        return execute(sql, params, many, context)


@pytest.fixture
def world(write_json, client):
    import_inat(write_json(inat_document(images=3)))
    Query.objects.create(id=5, text="Black Skimmer performing skimming")
    client.force_login(User.objects.create_user("ann", password="pw-ann-1"))
    return {"client": client, "image": Image.objects.order_by("pk").first().pk}


def _save(world):
    body = {"labels": [{"image": world["image"], "value": "relevant", "lead_time_ms": 800}], "source": "keyboard"}
    return world["client"].post(reverse("save-label", args=[5]), body, content_type="application/json")


def test_one_dropped_connection_is_retried_and_the_label_lands_once(world):
    dropper = DropBeforeLabelWrites(times=1)
    with connection.execute_wrapper(dropper):
        response = _save(world)
    assert dropper.left == 0, "the connection was never dropped: the test proved nothing"
    assert response.status_code == 200, response.content
    assert Label.objects.filter(query_id=5, value="relevant").count() == 1
    assert LabelEvent.objects.filter(query_id=5).count() == 1


def test_a_database_that_stays_away_answers_503_with_a_sentence_and_writes_nothing(world):
    with connection.execute_wrapper(DropBeforeLabelWrites(times=2)):
        response = _save(world)
    assert response.status_code == 503
    assert "nothing was saved" in response.json()["error"]
    assert response["Retry-After"] == "5"
    assert not Label.objects.exists() and not LabelEvent.objects.exists()
