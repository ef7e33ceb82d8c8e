"""A GET only reads (issue 65): every URL pattern of the project, walked as each role, writes nothing to the
database while it answers (sessions aside: Django's own session row). Before, the labeling page and its poll wrote
the queue's refusal onto an uploaded example; the releases page sent its reaper and a scoring's page its job
(those moved to beat: common/beat.py). The walk takes the URL conf itself, so a new route is walked as soon as it
exists; besides the patterns' own addresses it reads the pages of the world's real rows (a release, a check)."""

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import clear_url_caches

from annotator.completeness import check_requests, checks
from annotator.labels import LabelChange, set_labels
from annotator.models import QueryExample
from annotator.releases import publish as releases
from common import background
from search.facade import search
from tests.team.test_blind_everywhere import concrete, every_route

# transaction=True: as a server runs, so that what a GET defers to on_commit (a job sent) happens in the request
pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.slow]

WRITES = ("INSERT", "UPDATE", "DELETE", "REPLACE", "TRUNCATE", "ALTER", "DROP", "CREATE")


@pytest.fixture
def world(labeling, settings, tmp_path):
    """A query with judgments by two annotators (one split, waiting for the adjudicator), a check and a benchmark
    check open, an uploaded example still waiting for its vector, a release, the map; a user of each role."""
    settings.QUIRE_DATA_DIR = tmp_path / "data"
    query, ann = labeling["query"], labeling["annotator"]
    call_command("map_layout")
    top = [hit.image_id for hit in search(text=query.text, k=40)]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    changes = [LabelChange(i, "relevant" if n % 4 == 0 else "not_relevant") for n, i in enumerate(top[:30])]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    set_labels(query_id=query.pk, changes=[LabelChange(top[0], "not_relevant")], user=bob, source="keyboard")
    releases.create("v1")
    checks.draw(query, check_requests.read_request({"target_recall": 0.5, "confidence": 0.9, "with_unconfirmed": True}),
                None)  # fmt: skip
    checks.draw(
        None,
        check_requests.read_request({"target_recall": 0.5, "confidence": 0.9, "with_unconfirmed": True}, "benchmark"),
        None,
    )
    QueryExample.objects.create(query=query, upload="examples/missing.png", relevant=True, note="waiting for it")
    judge = User.objects.create_user("judge", password="pw-judge-1")
    judge.user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    lead = User.objects.create_user("lead", password="pw-lead-1", is_staff=True)
    lead.user_permissions.add(*Permission.objects.filter(content_type__app_label__in=["annotator", "evaluation"]))
    roles = {"nobody": None, "annotator": ann, "adjudicator": judge, "lead": lead, "superuser": labeling["admin"]}
    return {"query": query, "image": top[0], "roles": roles}


def walk(world, only: str = "") -> tuple[dict[str, list[str]], list[str], int]:
    """Every route's GET as every role: ({"role GET path": its SQL writes}, ["role GET path" that answered 500],
    how many routes). `only`: the paths holding it alone, of those the URL conf gave."""
    query = world["query"]
    ids = {
        "query_id": query.pk, "image_id": world["image"], "size": "thumb", "name": "v1", "file_name": "README.md",
        "kind": "json", "format": "json", "app_label": "annotator", "url": "annotator/label/", "default": 1,
        "rows": {"label": 1},
    }  # fmt: skip
    routes = every_route()
    paths = sorted({concrete(route, ids) for route, _ in routes})
    paths += [
        f"/queries/{query.pk}/?ranking=check", f"/queries/{query.pk}/?ranking=fusion", "/releases/v1/croissant.json",
        f"/api/queries/{query.pk}/completeness/", "/api/completeness/benchmark/", "/dashboard/", "/releases/",
    ]  # fmt: skip
    paths = [path for path in paths if only in path]
    found: dict[str, list[str]] = {}
    failed = []
    for role, user in world["roles"].items():
        client = Client(raise_request_exception=False)
        if user is not None:
            client.force_login(user)
        for path in paths:
            made, status = writes_of(client, path)
            if made:
                found[f"{role} GET {path}"] = made
            if status >= 500 and status != 503:  # 503: a service away, said so (no map yet, no broker)
                failed.append(f"{role} GET {path}")
    return found, failed, len(routes)


def writes_of(client: Client, path: str) -> tuple[list[str], int]:
    """The SQL writes a GET of `path` made, sessions aside, and its status."""
    cache.clear()  # a figure cached by an earlier GET must not hide a write this one would make
    with CaptureQueriesContext(connection) as asked:
        answer = client.get(path, HTTP_ACCEPT="text/html,application/json")
    made = [q["sql"] for q in asked.captured_queries if q["sql"].lstrip().split(" ", 1)[0].upper() in WRITES]
    return [sql for sql in made if "django_session" not in sql], answer.status_code


@pytest.mark.parametrize("queue", ["up", "away"])
def test_no_get_of_any_route_writes_or_fails_as_any_role(world, queue, monkeypatch):
    """With the job queue away too: that is when the labeling page used to write its refusal down."""
    if queue == "away":

        def unavailable(task, *args):
            raise background.QueueUnavailable("The job queue (Redis) is not answering.")

        monkeypatch.setattr(background, "submit", unavailable)
    found, failed, routes = walk(world)
    assert not found, "GETs that wrote:\n" + "\n".join(f"{where}: {sql[0][:200]}" for where, sql in found.items())
    assert not failed, f"GETs that answered 500: {failed}"
    assert routes > 100


def test_the_walk_finds_a_planted_get_that_writes(world, settings):
    settings.ROOT_URLCONF = "tests.security.planted_urls"
    clear_url_caches()
    try:
        found, _, _ = walk(world, only="/planted/")  # found by the walk of the URL conf, the rest walked above
    finally:
        clear_url_caches()
    assert set(found) >= {f"{role} GET /planted/writes-on-get" for role in world["roles"]}
    assert all("UPDATE" in sql[0] for sql in found.values())
