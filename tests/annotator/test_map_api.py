"""The map of the collection through the API: the layout job, GET /api/queries/{id}/map/ (JSON pages and the
binary form), and the candidates' `within=` polygon filter."""

import struct

import numpy as np
import pytest
from django.core.management import CommandError, call_command
from rest_framework.test import APIClient

from annotator.labels import LabelChange, set_labels
from annotator.map import points as map_view
from search import layout
from search.facade import score_images, search
from search.models import JobStatus, MapLayout
from search.polygon import parse
from search.spec import configured_spec, store_root
from search.store import EmbeddingStore
from tests.factories import database_snapshot, make_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def mapped(labeling, settings):
    settings.QUIRE_MAP_SAMPLE = 60  # half the collection fitted, half placed beside it
    call_command("map_layout")
    client = APIClient()
    client.force_authenticate(labeling["annotator"])
    return {**labeling, "api": client, "layout": layout.load(configured_spec().name)}


def test_the_command_maps_every_embedded_image_and_records_its_job(mapped):
    stored = mapped["layout"]
    embeddings = EmbeddingStore.existing(store_root(), configured_spec().name).load()
    assert stored.image_ids.tolist() == sorted(embeddings.image_ids.tolist())
    assert np.isfinite(stored.xy).all() and np.abs(stored.xy).max() <= layout.MAP_EXTENT + 1e-3
    job = MapLayout.objects.get()
    assert (job.status, job.mode, job.points, job.done) == (JobStatus.DONE, "fitted", 120, 120)


def test_images_of_a_taxon_sit_together(mapped):
    """The collection's three taxa have their own colours: their images' positions cluster by taxon."""
    embeddings = EmbeddingStore.existing(store_root(), configured_spec().name).load()
    taxon_of = dict(zip(embeddings.image_ids.tolist(), embeddings.taxon_ids.tolist(), strict=True))
    stored = mapped["layout"]
    taxa = np.array([taxon_of[i] for i in stored.image_ids.tolist()])
    distances = np.linalg.norm(stored.xy[:, None] - stored.xy[None], axis=2)
    same = taxa[:, None] == taxa[None]
    np.fill_diagonal(same, False)
    assert distances[same].mean() < 0.5 * distances[taxa[:, None] != taxa[None]].mean()


def test_new_images_are_placed_without_moving_the_map(mapped, tmp_path):
    before = mapped["layout"]
    make_collection(tmp_path / "more", 10, first_id=1000)
    call_command("embed")
    call_command("map_layout")
    after = layout.load(configured_spec().name)
    assert len(after) == 130 and after.version != before.version
    found, xy = after.positions(before.image_ids)
    assert found.all() and np.array_equal(xy, before.xy)  # the old points did not move
    assert MapLayout.objects.order_by("-pk").first().mode == "updated"


def test_a_layout_stopped_half_way_resumes_and_ends_where_an_unbroken_one_does(labeling, settings, monkeypatch):
    settings.QUIRE_MAP_SAMPLE = 30
    monkeypatch.setattr(layout, "PLACE_CHUNK", 20)
    model = configured_spec().name
    calls = []

    def crash_after_two(done, total):
        calls.append(done)
        if len(calls) == 2:
            raise RuntimeError("the worker was killed")

    with pytest.raises(RuntimeError):
        layout.compute(model, progress=crash_after_two)
    assert len(list(layout.folder(model).glob("part-*.npz"))) == 3  # the sample and two placed chunks
    assert not (layout.folder(model) / "layout.npz").exists()
    resumed = []
    layout.compute(model, progress=lambda done, total: resumed.append((done, total)))
    assert resumed[-1] == (50, 50)  # 120 - 30 sampled - 40 placed before the crash
    once = layout.load(model)
    layout.compute(model, refit=True)
    again = layout.load(model)
    assert np.array_equal(once.image_ids, again.image_ids) and np.allclose(once.xy, again.xy, atol=1e-4)


def test_the_command_without_embeddings_says_what_to_run(tiny_settings):
    with pytest.raises(CommandError, match="run `manage.py embed` first"):
        call_command("map_layout")


def all_points(api, query, page_size):
    points, url = [], f"/api/queries/{query.pk}/map/?page_size={page_size}"
    while url:
        response = api.get(url)
        assert response.status_code == 200, response.content
        points += response.json()["points"]
        url = response.json()["next"]
    return points


def test_the_map_pages_through_every_point_with_the_callers_labels(mapped):
    query, api = mapped["query"], mapped["api"]
    top = [hit.image_id for hit in search(text=query.text, k=10)]
    set_labels(
        query_id=query.pk,
        changes=[LabelChange(top[0], "relevant"), LabelChange(top[1], "not_relevant"), LabelChange(top[2], "unsure")],
        user=mapped["annotator"],
        source="api",
    )
    points = all_points(api, query, 7)
    stored = mapped["layout"]
    assert [p["image_id"] for p in points] == stored.image_ids.tolist()
    assert np.allclose([[p["x"], p["y"]] for p in points], stored.xy)
    labels = {p["image_id"]: p["label"] for p in points if p["label"]}
    assert labels == {top[0]: "relevant", top[1]: "not_relevant", top[2]: "unsure"}


def test_the_binary_form_holds_the_same_points(mapped):
    query, api = mapped["query"], mapped["api"]
    first = search(text=query.text, k=1)[0].image_id
    set_labels(query_id=query.pk, changes=[LabelChange(first, "relevant")], user=mapped["annotator"], source="api")
    body = api.get(f"/api/queries/{query.pk}/map/binary/").content
    magic, count, version_length = struct.unpack_from("<8sII", body)
    assert magic == map_view.BINARY_MAGIC and count == 120
    start = 16 + version_length + (-(16 + version_length) % 8)
    ids = np.frombuffer(body, "<i8", count, start)
    xs = np.frombuffer(body, "<f4", count, start + 8 * count)
    ys = np.frombuffer(body, "<f4", count, start + 12 * count)
    codes = np.frombuffer(body, "u1", count, start + 16 * count)
    assert len(body) == start + 17 * count
    stored = mapped["layout"]
    assert np.array_equal(ids, stored.image_ids) and np.array_equal(np.column_stack([xs, ys]), stored.xy)
    assert codes[ids.tolist().index(first)] == 1 and codes.sum() == 1


@pytest.mark.parametrize(
    "params", ["after=abc", "page_size=0", "page_size=50001", "after=-1", "after=99999999999999999999"]
)
def test_bad_map_parameters_get_400(mapped, params):
    response = mapped["api"].get(f"/api/queries/{mapped['query'].pk}/map/?{params}")
    assert response.status_code == 400


def test_no_map_yet_is_503_with_what_to_run(labeling):
    client = APIClient()
    client.force_authenticate(labeling["annotator"])
    response = client.get(f"/api/queries/{labeling['query'].pk}/map/")
    assert response.status_code == 503 and "manage.py map_layout" in response.json()["detail"]
    response = client.get(f"/api/queries/{labeling['query'].pk}/candidates/?within=0,0,1,0,1,1")
    assert response.status_code == 503 and "manage.py map_layout" in response.json()["detail"]


def box_around(xy, fraction=0.5):
    """A polygon through some of the stored points themselves (so that points lie on its edges and corners)."""
    lo, hi = xy.min(axis=0), xy.max(axis=0)
    mid = lo + (hi - lo) * fraction
    return [lo[0], lo[1], mid[0], lo[1], mid[0], mid[1], lo[0], mid[1]]


def test_within_returns_exactly_the_points_inside_in_ranking_order(mapped):
    query, api, stored = mapped["query"], mapped["api"], mapped["layout"]
    # A pentagon with a vertex and an edge placed on stored points.
    a, b = stored.xy[0].astype(np.float64), stored.xy[1].astype(np.float64)
    centre = stored.xy.mean(axis=0).astype(np.float64)
    corners = [a, b, b + (b - centre) * 0.5 + [0, 30], centre + [-40, 40], a + [-20, -5]]
    text = ",".join(f"{float(v)!r}" for corner in corners for v in corner)
    response = api.get(f"/api/queries/{query.pk}/candidates/", {"within": text, "k": 1000})
    assert response.status_code == 200, response.content
    got = [r["image_id"] for r in response.json()["results"]]
    # The expected set by an independent test: the winding number, plus the two points placed on the boundary.
    from tests.search.test_polygon import winding  # the second opinion the geometry tests use

    xs, ys = np.array([c[0] for c in corners]), np.array([c[1] for c in corners])
    expected = set(stored.image_ids[winding(xs, ys, stored.xy.astype(np.float64))].tolist())
    expected |= {int(stored.image_ids[0]), int(stored.image_ids[1])}
    assert set(got) == expected and 0 < len(got) < 120
    scores = score_images(text=query.text, image_ids=got)
    assert list(scores) == sorted(scores, reverse=True)  # the text ranking's order


def test_within_leaves_labeled_images_out_and_works_for_learning_strategies(mapped):
    query, api, stored = mapped["query"], mapped["api"], mapped["layout"]
    text = ",".join(f"{float(v)!r}" for v in box_around(stored.xy, 0.7))
    inside = [
        r["image_id"] for r in api.get(f"/api/queries/{query.pk}/candidates/?k=1000&within={text}").json()["results"]
    ]
    set_labels(
        query_id=query.pk,
        changes=[LabelChange(inside[0], "relevant"), LabelChange(inside[1], "not_relevant")],
        user=mapped["annotator"],
        source="api",
    )
    for strategy in ("text", "feedback", "rocchio", "alpha_qe"):
        response = api.get(f"/api/queries/{query.pk}/candidates/?k=1000&strategy={strategy}&within={text}")
        assert response.status_code == 200, (strategy, response.content)
        got = [r["image_id"] for r in response.json()["results"]]
        assert set(got) == set(inside[2:]), strategy
    first = api.get(f"/api/queries/{query.pk}/candidates/?k=3&strategy=feedback&within={text}").json()["results"]
    assert len(first) == 3 and [r["rank"] for r in first] == [1, 2, 3]


@pytest.mark.parametrize(
    "within, says",
    [
        ("0,0,10,10", "at least 3 vertices"),
        ("0,0,10,0,nan,10", "finite numbers"),
        ("0,0,10,10,0,10,10,0", "crosses itself"),
        (",".join(["1.5"] * 2_000_000), "too long"),
        ("0,0,1e999,0,5,5", "finite numbers"),
        ("0,0,1,0,\x00,1", "NUL character"),  # refused by quire.middleware before the view
    ],
)
def test_bad_polygons_get_400_with_a_sentence_and_change_nothing(mapped, within, says):
    before = database_snapshot()
    response = mapped["api"].get(f"/api/queries/{mapped['query'].pk}/candidates/", {"within": within})
    assert response.status_code == 400 and says in response.content.decode()
    assert database_snapshot() == before


def test_cluster_hints_point_at_promising_and_untouched_clusters(labeling, settings, monkeypatch, client):
    settings.QUIRE_MAP_SAMPLE = 60
    monkeypatch.setattr(layout, "REGION_SIZE", 20)  # six regions over 120 images
    call_command("map_layout")
    stored = layout.load(configured_spec().name)
    assert stored.regions is not None and len(set(stored.regions.tolist())) == 6
    query, ann = labeling["query"], labeling["annotator"]
    assert map_view.cluster_hints(query, ann, {}) == []  # nothing relevant found yet: nothing to point at
    region = stored.regions[0]
    members = stored.image_ids[stored.regions == region].tolist()
    changes = [LabelChange(i, "relevant") for i in members[:3]] + [LabelChange(members[3], "not_relevant")]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="api")
    seen = {c.image_id: c.value for c in changes}
    hints = map_view.cluster_hints(query, ann, seen)
    assert hints[0].text == f"{len(members) - 4} unlabeled images in a cluster where 3 of 4 labeled are relevant"
    outline = parse(hints[0].within)
    assert set(members) <= set(stored.image_ids[outline.contains(stored.xy)].tolist())
    untouched = [hint for hint in hints[1:]]
    assert untouched and all("nobody has labeled" in hint.text for hint in untouched)
    # The page shows them as links that select the cluster.
    client.force_login(ann)
    page = client.get(f"/queries/{query.pk}/").content.decode()
    assert "3 of 4 labeled are relevant" in page and "within=" in page


def test_staff_see_the_whole_collection_map_with_every_querys_labels(mapped, client):
    query, ann, admin = mapped["query"], mapped["annotator"], mapped["admin"]
    other = query.__class__.objects.create(text="a gull in flight", supercategory="Birds", category="Flight")
    top = [hit.image_id for hit in search(text=query.text, k=3)]
    set_labels(query_id=query.pk, changes=[LabelChange(top[0], "not_relevant")], user=ann, source="api")
    set_labels(query_id=other.pk, changes=[LabelChange(top[0], "relevant")], user=ann, source="api")
    set_labels(query_id=other.pk, changes=[LabelChange(top[1], "unsure")], user=ann, source="api")
    client.force_login(ann)
    assert client.get("/dashboard/map/points").status_code == 403  # the dashboard's permission
    client.force_login(admin)
    assert client.get("/dashboard/map/").status_code == 200
    body = client.get("/dashboard/map/points").content
    _, count, version_length = struct.unpack_from("<8sII", body)
    start = 16 + version_length + (-(16 + version_length) % 8)
    ids = np.frombuffer(body, "<i8", count, start).tolist()
    codes = np.frombuffer(body, "u1", count, start + 16 * count)
    assert codes[ids.index(top[0])] == 1  # relevant to one query wins over not relevant to another
    assert codes[ids.index(top[1])] == 2 and codes[ids.index(top[2])] == 0


def test_map_scores_are_the_rankings_scores_in_the_maps_order(mapped):
    query, api, stored = mapped["query"], mapped["api"], mapped["layout"]
    body = api.get(f"/api/queries/{query.pk}/map/scores/").content
    column = np.frombuffer(body, "<f4")
    assert len(column) == len(stored)
    expected = score_images(text=query.text, image_ids=stored.image_ids.tolist())
    assert np.allclose(column, expected, atol=1e-5)
    top = [hit.image_id for hit in search(text=query.text, k=20)]
    set_labels(
        query_id=query.pk,
        changes=[LabelChange(i, "relevant") for i in top[10:13]] + [LabelChange(i, "not_relevant") for i in top[:5]],
        user=mapped["annotator"],
        source="api",
    )
    learned = np.frombuffer(api.get(f"/api/queries/{query.pk}/map/scores/?strategy=feedback").content, "<f4")
    assert not np.allclose(learned, column)  # feedback learns from the labels the caller sees
    refused = api.get(f"/api/queries/{query.pk}/map/scores/?strategy=image")
    assert refused.status_code == 400 and b"example" in refused.content
    assert api.get(f"/api/queries/{query.pk}/map/scores/?strategy=bogus").status_code == 400


class _Killed(BaseException):
    """A worker killed mid-run: no handler of the job's own runs (kill -9 runs none)."""


def test_a_refit_killed_half_way_keeps_the_map_in_use_and_the_reaper_resumes_it(mapped, monkeypatch):
    from search import map_jobs  # only this test runs the job function itself

    model = configured_spec().name
    before = layout.load(model)
    job = MapLayout.objects.create(model_name=model, refit=True)
    monkeypatch.setattr(layout, "PLACE_CHUNK", 20)
    real_place = layout.place
    calls = []

    def place_then_die(fitted, vectors):
        calls.append(1)
        if len(calls) == 2:
            raise _Killed
        return real_place(fitted, vectors)

    monkeypatch.setattr(layout, "place", place_then_die)
    with pytest.raises(_Killed):
        map_jobs.run_map_layout(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.refit is False  # the fit is made: the job resumes, not refits
    # The map in use is the old one, whole, all along: every route reads it while the refit works beside it.
    during = layout.load(model)
    assert during.version == before.version and np.array_equal(during.image_ids, before.image_ids)
    new_fit = layout.folder(model) / layout.NEXT / "fit.npz"
    made = new_fit.stat().st_mtime_ns
    assert mapped["api"].get(f"/api/queries/{mapped['query'].pk}/map/binary/").status_code == 200

    assert map_jobs.reap() == [job.pk]  # nobody holds it: sent again (run here, with no broker), and it resumes
    job.refresh_from_db()
    fit_file = layout.folder(model) / "fit.npz"
    assert fit_file.stat().st_mtime_ns == made and (job.status, job.mode, job.points) == (JobStatus.DONE, "fitted", 120)
    assert job.attempts == 2 and not (layout.folder(model) / layout.NEXT).exists()
    assert layout.load(model).version != before.version
    assert map_jobs.reap() == []


def test_a_refit_killed_between_saving_its_fit_and_recording_it_ends_as_a_new_map(mapped, monkeypatch):
    """A kill can fall after the new fit is on disk and before the job records it (seen in a suite run: the refit then
    said "Placed 120 new images" where a new map was made). The resumed job keeps that fit and says "fitted"."""
    from search import map_jobs  # only this test runs the job function itself

    model = configured_spec().name
    before = layout.load(model)
    job = MapLayout.objects.create(model_name=model, refit=True)
    real_fit_anew = layout._fit_anew

    def fit_then_die(work, embeddings, fitted_now):
        real_fit_anew(work, embeddings, None)  # saved, never recorded
        raise _Killed

    monkeypatch.setattr(layout, "_fit_anew", fit_then_die)
    with pytest.raises(_Killed):
        map_jobs.run_map_layout(job.pk)
    job.refresh_from_db()
    assert job.status == JobStatus.RUNNING and job.refit is True and job.mode == ""
    made = (layout.folder(model) / layout.NEXT / "fit.npz").stat().st_mtime_ns

    monkeypatch.setattr(layout, "_fit_anew", real_fit_anew)
    assert map_jobs.reap() == [job.pk]
    job.refresh_from_db()
    assert (job.status, job.mode, job.attempts) == (JobStatus.DONE, "fitted", 2)
    assert (layout.folder(model) / "fit.npz").stat().st_mtime_ns == made  # the fit it saved, not a second one
    assert layout.load(model).version != before.version


def test_a_layout_that_keeps_killing_its_worker_fails_with_a_sentence(mapped):
    from search import map_jobs  # only this test runs the job function itself

    job = MapLayout.objects.create(model_name=configured_spec().name, status=JobStatus.RUNNING, attempts=3)
    assert map_jobs.reap() == [job.pk]
    job.refresh_from_db()
    assert job.status == JobStatus.FAILED and "stopped 3 times" in job.error and "unchanged" in job.error


def test_a_filter_and_a_selection_with_nothing_in_common_say_so_in_the_grid(mapped, client):
    """Issue 64: an empty grid (a species filter and a map selection with no image in common) showed no sentence."""
    query, stored = mapped["query"], mapped["layout"]
    embeddings = EmbeddingStore.existing(store_root(), configured_spec().name).load()
    taxon_of = dict(zip(embeddings.image_ids.tolist(), embeddings.taxon_ids.tolist(), strict=True))
    first = taxon_of[int(stored.image_ids[0])]
    x, y = (float(v) for v in stored.xy[0])
    tiny = ",".join(f"{v!r}" for v in (x - 0.01, y - 0.01, x + 0.01, y - 0.01, x + 0.01, y + 0.01, x - 0.01, y + 0.01))
    other = next(t for t in sorted(set(taxon_of.values())) if t != first)
    client.force_login(mapped["annotator"])
    url = f"/queries/{query.pk}/"
    both = client.get(url, {"within": tiny, "taxon": str(other)}).content.decode()
    assert '<figure class="tile' not in both
    assert "No image to show: the species filters and the map&#x27;s selection have no image in common" in both
    alone = client.get(url, {"within": tiny}).content.decode()
    assert '<figure class="tile' in alone and "No image to show" not in alone
