"""Blind means blind on every route: a test that walks every URL of the URL conf as an annotator judging an
overlap sample blind, and fails on any leak.

What "learns nothing" means here, checked without knowing what any page shows: the blind annotator's answers
are the same, byte for byte (volatile tokens masked), whatever the other annotator judged of the sealed images:
nothing, all relevant, all not relevant, or a mix. Each world is built inside a savepoint and rolled back; every
request that writes runs in its own savepoint too, so the walk sees one state. The blind annotator holds every
permission but "can adjudicate" (adjudicators read every judgment by design), and is staff, so the admin's
label tables are walked as well.
"""

import difflib
import random
import re

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.core.management import call_command
from django.db import connection, transaction
from django.test import Client
from django.urls import URLPattern, URLResolver, get_resolver

from annotator.labels import LabelChange, set_labels
from annotator.labels.sealed import blind_images
from annotator.models import Judgment, Label, LabelEvent, OverlapImage, Query
from search.facade import search

pytestmark = pytest.mark.django_db

WORLDS = ("nobody judged", "relevant", "not_relevant", "mixed")
SEALED_ROWS = {"label": 900_001, "judgment": 900_002, "labelevent": 900_003}  # the ids of one sealed image's rows
MASKS = [
    (re.compile(rb"\b[A-Za-z0-9]{64}\b"), b"csrf"),  # Django's masked CSRF tokens, new on every page
    (re.compile(rb'value="\d\d:\d\d:\d\d"'), b"now"),  # a new row's default time in the admin's add forms
    (re.compile(rb'"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z"'), b"now"),  # when the walk's own write was made
]


@pytest.fixture
def sealed(labeling):
    """Ann has judged images of query 1 (some in a sample of 3 judgments each: sealed to Bob); Bob holds every
    permission but adjudication and has judged two images of his own."""
    query, ann = labeling["query"], labeling["annotator"]
    call_command("map_layout")  # the map's routes (its points' labels, the lasso's candidates) are walked too
    top = [hit.image_id for hit in search(text=query.text, k=60)]
    Query.objects.filter(pk=query.pk).update(judgments_wanted=3)
    OverlapImage.objects.bulk_create([OverlapImage(query=query, image_id=image_id) for image_id in top[:20]])
    changes = [LabelChange(image_id, "relevant" if n % 3 else "not_relevant") for n, image_id in enumerate(top[20:40])]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")  # outside the sample: seen by all
    bob = User.objects.create_user("bob", password="pw-bob-1", is_staff=True)
    bob.user_permissions.add(*Permission.objects.exclude(codename="adjudicate_labels"))
    set_labels(query_id=query.pk, changes=[LabelChange(top[40], "unsure")], user=bob, source="click")
    set_labels(query_id=query.pk, changes=[LabelChange(top[0], "relevant")], user=bob, source="click")  # sealed, his
    client = Client()
    client.force_login(bob)
    return {"query": query, "ann": ann, "bob": bob, "sealed": top[:20], "seen": top[20:40], "client": client}


def judge_sealed(world: str, query: Query, ann: User, sealed: list[int]) -> None:
    """Ann's judgments of the sealed images in `world` (the only thing that differs between worlds)."""
    if world == "nobody judged":
        return
    rng = random.Random(7)
    values = [world] * len(sealed) if world != "mixed" else [rng.choice(["relevant", "not_relevant"]) for _ in sealed]
    set_labels(
        query_id=query.pk,
        changes=[LabelChange(i, v) for i, v in zip(sealed, values, strict=True)],
        user=ann,
        source="click",
    )
    # One sealed image's rows get the ids every world's walk asks for (a world without them answers for none).
    rows = {
        "label": Label.objects.filter(query=query, image_id=sealed[5]),
        "judgment": Judgment.objects.filter(query=query, image_id=sealed[5], annotator=ann),
        "labelevent": LabelEvent.objects.filter(query=query, image_id=sealed[5], annotator=ann),
    }
    with connection.cursor() as cursor:  # by SQL: the label models refuse writes made outside annotator.labels
        for kind, found in rows.items():
            table = connection.ops.quote_name(found.model._meta.db_table)
            cursor.execute(
                f"UPDATE {table} SET id = %s WHERE id = %s", [SEALED_ROWS[kind], found.values("pk")[0]["pk"]]
            )


def every_route(resolvers=None, prefix: str = "") -> list[tuple[str, str]]:
    """(route, view name) for every URL pattern of the URL conf, includes followed."""
    found = []
    for entry in resolvers if resolvers is not None else get_resolver().url_patterns:
        route = prefix + str(entry.pattern)
        if isinstance(entry, URLResolver):
            found += every_route(entry.url_patterns, route)
        elif isinstance(entry, URLPattern):
            found.append((route, entry.lookup_str))
    return found


def concrete(route: str, ids: dict) -> str:
    """A route with its parameters filled: the sealed image and its rows where a parameter names one."""
    path = route.replace("^", "").replace("$", "")  # DRF's and the admin's regular expressions

    def value(name: str) -> str:
        model = re.search(r"admin/\w+/(\w+)/", path)
        if name == "object_id" and model and model.group(1) in ids["rows"]:
            return str(ids["rows"][model.group(1)])
        if path.startswith("api/labels") and name == "pk":
            return str(ids["rows"]["label"])
        if path.startswith("api/queries") and name == "pk":
            return str(ids["query_id"])
        return str(ids.get(name, ids["default"]))

    path = re.sub(r"\\\.\(\?P<format>[^)]+\)/\?", ".json", path)  # DRF's format suffix
    path = re.sub(r"\(\?P<(\w+)>[^)]*\)", lambda m: value(m.group(1)), path)
    path = re.sub(r"<(?:\w+:)?(\w+)>", lambda m: value(m.group(1)), path)
    return "/" + path.replace("/?", "/").replace("\\.", ".")


def answers_of(client: Client, requests: list[tuple[str, str, dict | None]]) -> dict:
    """{(method, path): (status, masked body)} for each request, each in a savepoint rolled back after it."""
    answers = {}
    for method, path, body in requests:
        cache.clear()  # the figures' cache would carry one world's values into the next
        with transaction.atomic():
            if method == "GET":
                response = client.get(path, HTTP_ACCEPT="text/html,application/json")
            else:
                response = client.post(path, body or {}, content_type="application/json")
            transaction.set_rollback(True)
        content = b"".join(response.streaming_content) if response.streaming else response.content
        for pattern, mask in MASKS:
            content = pattern.sub(mask, content)
        answers[method, path] = (response.status_code, content)
    return answers


def same_in_every_world(walked: dict[str, dict]) -> None:
    """Every request answered byte for byte the same in every world (each world's answers beside the first's)."""
    first, *others = list(walked)
    for world in others:
        for key, answer in walked[first].items():
            assert answer == walked[world][key], (
                f"{key[0]} {key[1]} answers differently when ann judged {world!r}:\n"
                + difference(answer, walked[world][key])
            )


def difference(first: tuple[int, bytes], second: tuple[int, bytes]) -> str:
    """The first lines where two answers differ, to read in the failure."""
    if first[0] != second[0]:
        return f"status {first[0]} against {second[0]}"
    lines = difflib.unified_diff(
        first[1].decode(errors="replace").splitlines(),
        second[1].decode(errors="replace").splitlines(),
        lineterm="",
        n=0,
    )
    return "\n".join(list(lines)[2:12])


def test_a_blind_annotator_learns_nothing_on_any_route(sealed):
    query, client = sealed["query"], sealed["client"]
    hidden, seen = sealed["sealed"], sealed["seen"]
    routes = every_route()
    base = {
        "query_id": query.pk, "image_id": hidden[5], "size": "thumb", "name": "inquire_labels.csv", "kind": "json",
        "format": "json", "app_label": "annotator", "url": "annotator/label/", "default": hidden[5],
    }  # fmt: skip
    writes = [
        # Bob judges sealed images (still 2 of 3 judgments: sealed after), and images everyone sees.
        ("POST", f"/queries/{query.pk}/labels", {"image": hidden[6], "value": "not_relevant", "source": "click"}),
        ("POST", f"/queries/{query.pk}/labels", {"labels": [{"image": i, "value": "relevant"} for i in hidden[7:9]]}),
        ("POST", f"/queries/{query.pk}/submit", {"images": hidden[9:14] + seen[:3]}),
        ("POST", f"/api/queries/{query.pk}/labels/", {"labels": [{"image": hidden[14], "value": "unsure"}]}),
        ("POST", "/api/labels/", {"query": query.pk, "image": hidden[15], "value": "relevant"}),
        ("POST", f"/queries/{query.pk}/adjudicate", {"image": hidden[16], "value": "relevant"}),
        # Issue 63: Bob is staff who judges blind; a check's cost is read off every judgment, so it is refused alike.
        ("POST", f"/api/queries/{query.pk}/completeness/", {"dry_run": True, "second_judgments": False}),
        ("POST", f"/api/queries/{query.pk}/completeness/", {"dry_run": True}),
        ("POST", "/api/completeness/benchmark/", {"dry_run": True, "target_recall": 0.5}),
    ]
    reads = [
        f"/api/labels/?query={query.pk}",
        f"/api/labels/?query={query.pk}&value=relevant",
        f"/api/labels/?query={query.pk}&value=not_relevant",
        f"/api/labels/?image={hidden[5]}",
        f"/api/queries/{query.pk}/candidates/?k=60",
        f"/api/queries/{query.pk}/candidates/?k=120&within=-1000,-1000,1000,-1000,1000,1000,-1000,1000",
        f"/api/queries/{query.pk}/map/?page_size=50",
        f"/api/queries/{query.pk}/map/binary/",
        f"/queries/{query.pk}/?within=-1000,-1000,1000,-1000,1000,1000,-1000,1000&size=200",
        f"/queries/{query.pk}/?hide_labeled=on",
        f"/queries/{query.pk}/results?offset=0",
        "/dashboard/?sort=-relevant",
        "/?sort=-labeled",
        "/admin/annotator/label/",
        "/admin/annotator/judgment/",
        "/admin/annotator/labelevent/",
        "/admin/annotator/query/",
        *[f"/exports/{name}" for name in ("inquire_labels.csv", "inquire_judgments.csv", "inquire_annotations.csv")],
        f"/exports/inquire_labels.csv?query={query.pk}",
    ]
    walked: dict[str, dict] = {}
    for world in WORLDS:
        with transaction.atomic():
            judge_sealed(world, query, sealed["ann"], hidden)
            ids = {**base, "rows": SEALED_ROWS}
            requests = [("GET", concrete(route, ids), None) for route, _ in routes]
            requests += [("GET", path, None) for path in reads] + writes
            walked[world] = answers_of(client, requests)
            transaction.set_rollback(True)
    assert len(walked[WORLDS[0]]) >= len(routes)
    same_in_every_world(walked)
    # The walk did reach the pages: the grid and the API answered, and the exports were refused with a reason.
    answered = walked[WORLDS[0]]
    assert answered["GET", f"/queries/{query.pk}/"][0] == 200
    page = answered["GET", f"/queries/{query.pk}/"][1].decode()
    # Bob's counts are his tiles: ann's 20 images outside the sample (13 relevant), his unsure, and his own
    # judgment of a sealed image; the run and the estimate say why they are hidden.
    assert 'id="query-counts">22 labeled, 14 relevant, 1 unsure' in page
    assert 'id="figures-withheld"' in page and "you judge 19 of this query&#x27;s images blind" in page
    assert answered["GET", f"/api/labels/?query={query.pk}"][0] == 200
    assert answered["GET", "/exports/inquire_labels.csv"][0] == 403
    refused = answered["GET", "/exports/inquire_labels.csv"][1]
    assert b'id="refusal"' in refused and b"blind overlap samples" in refused  # Quire's page, with the reason
    dry = answered["POST", f"/api/queries/{query.pk}/completeness/"]
    assert dry[0] == 403 and b"A completeness check's cost and frame" in dry[1]


def test_every_route_is_walked():
    """A new URL pattern is walked as soon as it exists: the walk takes the URL conf itself, and each route
    becomes a concrete address (no parameter left unfilled)."""
    ids = {"query_id": 1, "image_id": 2, "default": 3, "rows": {"label": 4}}
    for route, view in every_route():
        path = concrete(route, ids)
        assert "<" not in path and "(?P" not in path, f"{route} ({view}) is not walked: {path}"


def test_a_blind_judge_learns_nothing_through_the_checks(sealed):
    """Issue 51: a query's open check and an open benchmark check, their samples judged by Ann in each world; Bob
    (staff without adjudication, so his dry runs are a staff blind judge's) reads the check ranking's order, the
    counts, the claims, the advice and both dry runs, and they are the same byte for byte whatever Ann said. Issue 62:
    each sampled image wants one fresh look, so the ranking tells Bob that someone looked at an image (it leaves his
    list once Ann has), never what they said: the worlds compared are those where Ann judged."""
    from annotator.completeness import check_requests, checks
    from annotator.models import CheckImage, CompletenessCheck

    query, client, ann = sealed["query"], sealed["client"], sealed["ann"]
    anyway = {"target_recall": 0.5, "confidence": 0.9, "with_unconfirmed": True}  # the sealed world's own clicks
    checks.draw(query, check_requests.read_request({**anyway, "frame": {"kind": "collection"}}), None)
    checks.draw(None, check_requests.read_request(anyway, "benchmark"), None)
    drawn = set(CompletenessCheck.objects.get(claim="query").images.values_list("image_id", flat=True))
    drawn |= set(CheckImage.objects.filter(completeness_check__claim="benchmark").values_list("image_id", flat=True))
    mine = set(Judgment.objects.filter(query=query, annotator=sealed["bob"]).values_list("image_id", flat=True))
    # The sampled images sealed to Bob: those someone had judged (a fresh look at them is blind to the old vote) and
    # the overlap sample's. An image nobody had judged wants one look, and once given nobody judges it blind.
    blind = blind_images(query, sealed["bob"])
    hidden = sorted((drawn & blind) - mine - set(sealed["seen"]))[:40]
    assert len(hidden) >= 5, hidden
    dry = {"dry_run": True, "target_recall": 0.5, "confidence": 0.9}
    requests = [
        ("GET", f"/api/queries/{query.pk}/candidates/?strategy=check&k=500", None),
        ("GET", f"/queries/{query.pk}/?ranking=check&size=200", None),
        ("GET", f"/queries/{query.pk}/figures", None),
        ("GET", f"/api/queries/{query.pk}/completeness/", None),
        ("GET", f"/api/queries/{query.pk}/completeness/?claim=benchmark", None),
        ("GET", "/api/completeness/benchmark/", None),
        ("GET", "/dashboard/", None),
        ("GET", f"/dashboard/{query.pk}/", None),
        ("GET", "/", None),
        ("POST", f"/api/queries/{query.pk}/completeness/", {**dry, "frame": {"kind": "collection"}}),
        ("POST", "/api/completeness/benchmark/", dry),
        ("GET", f"/api/queries/{query.pk}/completeness/frame/", None),
        ("GET", f"/api/completeness/benchmark/frame/?query={query.pk}", None),
        ("GET", f"/queries/{query.pk}/completeness/cost?kind=collection&target_recall=0.5&confidence=0.9", None),
    ]
    # Issue 63: a check's cost and frame are computed from every judgment, so they are refused to a staff member who
    # judges some of the query's images blind, with the same sentence in every world.
    refused = {(method, path) for method, path, _ in requests[-5:]}
    walked = {}
    for world in WORLDS[1:]:
        with transaction.atomic():
            judge_sealed(world, query, ann, hidden)
            walked[world] = answers_of(client, requests)
            transaction.set_rollback(True)
    same_in_every_world(walked)
    answered = walked[WORLDS[1]]
    expected = {key: 403 if key in refused else 200 for key in answered}
    assert {key: status for key, (status, _) in answered.items()} == expected
    for key in refused:
        assert b"A completeness check&#x27;s cost and frame" in answered[key][1] or (
            b"A completeness check's cost and frame" in answered[key][1]
        ), key
    assert b'"image_id"' in answered["GET", f"/api/queries/{query.pk}/candidates/?strategy=check&k=500"][1]
