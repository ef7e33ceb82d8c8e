"""The labeling endpoints through Django's test client (the browser flow is in test_browser.py)."""

import re

import pytest
from django.urls import reverse
from django.utils.html import escape

from annotator.labels import set_label
from annotator.models import Label, LabelEvent, LabelSource, LabelValue, Query, QueryExample
from annotator.progress import figures as progress
from catalog.models import Image, ImageRoot

pytestmark = pytest.mark.django_db


def tile_ids(html: str) -> list[int]:
    return [int(match) for match in re.findall(r'data-image-id="(\d+)"', html)]


@pytest.fixture
def ann(client, labeling):
    client.force_login(labeling["annotator"])
    return client


def test_the_page_shows_50_ranked_tiles_with_stored_labels(ann, labeling):
    query = labeling["query"]
    first = tile_ids(ann.get(reverse("label", args=[query.pk])).content.decode())
    assert len(first) == 50
    set_label(query_id=query.pk, image_id=first[3], value=LabelValue.UNSURE, source=LabelSource.API)
    html = ann.get(reverse("label", args=[query.pk])).content.decode()
    assert f'data-image-id="{first[3]}" data-label="unsure"' in html
    assert 'name="q" value="Black Skimmer performing skimming"' in html and 'name="taxon"' in html
    hidden = tile_ids(ann.get(reverse("label", args=[query.pk]), {"hide": "1"}).content.decode())
    assert first[3] not in hidden and len(hidden) == 50


def test_load_more_continues_the_ranking(ann, labeling):
    query = labeling["query"]
    url = reverse("label", args=[query.pk])
    big = tile_ids(ann.get(url, {"size": "200"}).content.decode())
    assert len(big) == 120
    first = tile_ids(ann.get(url).content.decode())
    more = ann.get(reverse("results", args=[query.pk]), {"offset": "50"}).content.decode()
    assert first + tile_ids(more) == big[:100]
    assert "offset=100" in more


def test_taxon_filters_at_any_rank_and_their_errors(ann, labeling):
    query = labeling["query"]
    url = reverse("label", args=[query.pk])
    ids = tile_ids(ann.get(url, {"taxon": ["11", "Leucophaeus"], "size": "200"}).content.decode())
    assert set(Image.objects.filter(pk__in=ids).values_list("taxon_id", flat=True)) == {11, 12} and len(ids) == 80
    html = ann.get(url, {"taxon": "Laridea"}).content.decode()
    assert "No taxon is called &#x27;Laridea&#x27;. Did you mean &#x27;Laridae&#x27;" in html
    suggestions = ann.get(reverse("suggest-taxa"), {"taxon": "puff"}).content.decode()
    assert 'data-value="11"' in suggestions and "Atlantic Puffin (Fratercula arctica)" in suggestions
    assert "family Laridae (all species)" in ann.get(reverse("suggest-taxa"), {"taxon": "lari"}).content.decode()


def test_saving_clearing_and_bad_saves(ann, labeling):
    query = labeling["query"]
    url = reverse("save-label", args=[query.pk])
    response = ann.post(url, {"image": 5, "value": "relevant", "source": "keyboard"}, content_type="application/json")
    assert response.json()["counts"]["relevant"] == 1
    ann.post(url, {"image": 5, "value": "relevant", "source": "keyboard"}, content_type="application/json")  # a retry
    assert LabelEvent.objects.filter(image_id=5).count() == 1
    ann.post(url, {"image": 5, "value": "", "source": "keyboard"}, content_type="application/json")
    assert not Label.objects.exists() and LabelEvent.objects.filter(image_id=5).count() == 2
    for body, status in [
        ({"image": "x", "value": "relevant"}, 400),
        ({"image": 5, "value": "maybe"}, 400),
        ({"image": 99999, "value": "relevant"}, 404),
        ({"image": 5, "value": "relevant", "source": "import"}, 400),
    ]:
        assert ann.post(url, body, content_type="application/json").status_code == status
    assert (
        ann.post(
            reverse("save-label", args=[9999]), {"image": 5, "value": "relevant"}, content_type="application/json"
        ).status_code
        == 404
    )
    assert not Label.objects.exists()


def test_a_batch_records_each_labels_own_source_and_refuses_a_wrong_one(ann, labeling):
    query = labeling["query"]
    url = reverse("save-label", args=[query.pk])
    mixed = {"labels": [{"image": 5, "value": "relevant", "source": "click"}, {"image": 6, "value": "unsure"}]}
    assert ann.post(url, {**mixed, "source": "keyboard"}, content_type="application/json").status_code == 200
    assert dict(LabelEvent.objects.values_list("image_id", "source")) == {5: "click", 6: "keyboard"}
    wrong = {"labels": [{"image": 7, "value": "relevant"}, {"image": 8, "value": "relevant", "source": "api"}]}
    response = ann.post(url, wrong, content_type="application/json")
    assert response.status_code == 400
    assert response.json()["error"] == "labels[1]: source must be click or keyboard."
    assert set(Label.objects.values_list("image_id", flat=True)) == {5, 6}  # nothing of the refused batch


def test_submit_labels_only_unlabeled_images_not_relevant(ann, labeling):
    query = labeling["query"]
    set_label(query_id=query.pk, image_id=2, value=LabelValue.RELEVANT, source=LabelSource.API)
    response = ann.post(reverse("submit", args=[query.pk]), {"images": [1, 2, 3]}, content_type="application/json")
    assert response.json()["written"] == 2
    assert dict(Label.objects.values_list("image_id", "value")) == {1: "not_relevant", 2: "relevant", 3: "not_relevant"}
    assert set(LabelEvent.objects.filter(source=LabelSource.SUBMIT).values_list("image_id", flat=True)) == {1, 3}
    bad = ann.post(reverse("submit", args=[query.pk]), {"images": [4, 99999]}, content_type="application/json")
    assert bad.status_code == 400 and not Label.objects.filter(image_id=4).exists()


def test_thumbnails_are_cached_and_paths_never_leave_the_root(ann, labeling, tmp_path, settings):
    response = ann.get(reverse("image-file", args=[7, "thumb"]))
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    cached = list((settings.QUIRE_DATA_DIR / "thumbnails").rglob("7.jpg"))
    assert len(cached) == 1
    assert ann.get(reverse("image-file", args=[7, "file"])).status_code == 200
    secret = tmp_path / "secret.jpg"
    secret.write_bytes((labeling["images"] / "11" / "7.jpg").read_bytes())
    root = ImageRoot.objects.get()
    Image.objects.create(id=5000, root=root, file_name="../secret.jpg")
    assert ann.get(reverse("image-file", args=[5000, "file"])).status_code == 404
    assert ann.get(reverse("image-file", args=[5000, "thumb"])).status_code == 404
    assert ann.get(reverse("image-file", args=[7, "etc"])).status_code == 404


def test_pages_need_a_login(client, labeling):
    query = labeling["query"]
    assert client.get(reverse("label", args=[query.pk])).status_code == 302
    # The page's saves get a sentence and 401, not a redirect to the login form that fetch would follow.
    refused = client.post(reverse("save-label", args=[query.pk]), {"image": 5, "value": "relevant"})
    assert refused.status_code == 401 and refused.json()["error"] == "Your session ended: log in again."
    assert client.post(reverse("submit", args=[query.pk]), {"images": [5]}).status_code == 401
    assert not Label.objects.exists()
    assert client.get(reverse("dashboard")).status_code == 302


def test_query_list_search_sort_and_add(ann, labeling):
    Query.objects.create(text="puffins carrying food")
    html = ann.get(reverse("home"), {"search": "puffin"}).content.decode()
    assert "puffins carrying food" in html and "Black Skimmer" not in html
    response = ann.post(reverse("home"), {"text": "  flamingo standing on one leg ", "split": "other"})
    created = Query.objects.get(text="flamingo standing on one leg")
    assert response.status_code == 302 and response["Location"] == reverse("label", args=[created.pk])
    assert "Type the query" in ann.post(reverse("home"), {"text": "   ", "split": "other"}).content.decode()


def test_dashboard_counts_run_and_tracking(client, labeling):
    query = labeling["query"]
    client.force_login(labeling["admin"])
    ranked = tile_ids(client.get(reverse("label", args=[query.pk]), {"size": "200"}).content.decode())
    set_label(
        query_id=query.pk,
        image_id=ranked[0],
        value=LabelValue.RELEVANT,
        user=labeling["annotator"],
        source=LabelSource.CLICK,
    )
    for image_id in ranked[1:4]:
        set_label(
            query_id=query.pk,
            image_id=image_id,
            value=LabelValue.NOT_RELEVANT,
            user=labeling["admin"],
            source=LabelSource.CLICK,
        )
    set_label(
        query_id=query.pk,
        image_id=ranked[10],
        value=LabelValue.UNSURE,
        user=labeling["admin"],
        source=LabelSource.CLICK,
    )
    progress.refresh([query.pk])  # the background job (annotator.refresh_progress): run and TSR are never inline
    html = client.get(reverse("dashboard")).content.decode()
    row = re.search(rf'<tr data-query-id="{query.pk}">(.*?)</tr>', html, re.S).group(1)
    assert (
        '<td class="num labeled">5</td>' in row
        and '<td class="num relevant">1</td>' in row
        and '<td class="num unsure">1</td>' in row
    )
    assert "ann, boss" in row
    assert re.search(r'<td class="num ">0</td>', row)  # the deepest labeled rank is unsure: the run is 0
    set_label(
        query_id=query.pk,
        image_id=ranked[10],
        value=LabelValue.NOT_RELEVANT,
        user=labeling["admin"],
        source=LabelSource.CLICK,
    )
    # Nothing is computed in the request: "computing…" until the background job has cached the figures.
    row = re.search(
        rf'<tr data-query-id="{query.pk}">(.*?)</tr>', client.get(reverse("dashboard")).content.decode(), re.S
    ).group(1)
    assert "computing…" in row and '<td class="num labeled">5</td>' in row
    progress.refresh([query.pk])  # the background job (annotator.refresh_progress)
    row = re.search(
        rf'<tr data-query-id="{query.pk}">(.*?)</tr>', client.get(reverse("dashboard")).content.decode(), re.S
    ).group(1)
    assert re.search(r'<td class="num ">4</td>', row)
    # In rank order: relevant, then four not relevant. TSR = (4/5 + 1 + 1 + 1 + 1) / 5.
    assert '<td class="num tsr">0.96</td>' in row
    row = re.search(
        rf'<tr data-query-id="{query.pk}">(.*?)</tr>', client.get(reverse("dashboard")).content.decode(), re.S
    ).group(1)
    assert 'class="claim none muted"' in row  # no completeness check drawn yet
    page = client.get(reverse("dashboard-query", args=[query.pk])).content.decode()
    assert "Judgments per annotator" in page and "boss" in page and f"?query={query.pk}" in page
    client.post(
        reverse("dashboard-query", args=[query.pk]), {"status": "done", "fully_labeled": "yes", "notes": "checked"}
    )
    query.refresh_from_db()
    assert (query.status, query.fully_labeled, query.notes) == ("done", "yes", "checked")


def test_submit_refuses_what_is_not_a_list_of_ids(ann, labeling):
    url = reverse("submit", args=[labeling["query"].pk])
    for body in ({"images": "1,2"}, {"images": [1, "x"]}, {"images": {"1": 2}}):
        assert ann.post(url, body, content_type="application/json").status_code == 400
    assert ann.post(url, "not json", content_type="application/json").status_code == 400  # issue 27: was 200
    assert not Label.objects.exists()


def test_the_query_list_refuses_duplicates_and_overlong_texts(ann, labeling):
    before = Query.objects.count()
    for duplicate in ("black skimmer  PERFORMING skimming", "  Black Skimmer performing skimming "):
        html = ann.post(reverse("home"), {"text": duplicate, "split": "other"}).content.decode()
        assert f"Query {labeling['query'].pk} already has this text" in html
    html = ann.post(reverse("home"), {"text": "x" * 1001, "split": "other"}).content.decode()
    assert "at most 1,000 characters; this one has 1,001" in html
    assert Query.objects.count() == before


def test_the_query_list_shows_progress_toward_done(ann, labeling):
    query = labeling["query"]
    ranked = tile_ids(ann.get(reverse("label", args=[query.pk]), {"size": "200"}).content.decode())
    for image_id in ranked[-30:]:  # 30 not relevant at the deepest ranks: 30% of INQUIRE's 100
        set_label(query_id=query.pk, image_id=image_id, value=LabelValue.NOT_RELEVANT, source=LabelSource.API)
    done = Query.objects.create(text="flamingo standing on one leg", status=Query.Status.DONE)
    progress.refresh([query.pk, done.pk])  # the background job: the run is never computed in the request
    html = ann.get(reverse("home")).content.decode()
    assert re.search(rf'data-query-id="{query.pk}".*?<meter[^>]*value="30"', html, re.S)
    assert re.search(rf'data-query-id="{done.pk}".*?<meter[^>]*value="100"', html, re.S)
    assert 'class="qtext"' in html  # long texts are cut by the style, whole in the title


def test_a_locked_query_refuses_non_staff_changes(client, labeling):
    query = labeling["query"]
    query.locked = True
    query.save()
    client.force_login(labeling["annotator"])
    body = {"image": 5, "value": "relevant", "source": "click"}
    refused = client.post(reverse("save-label", args=[query.pk]), body, content_type="application/json")
    assert refused.status_code == 403 and "locked by staff" in refused.json()["error"]
    assert client.post(reverse("submit", args=[query.pk]), {"images": [5]}).status_code == 403
    tracking = client.post(reverse("save-tracking", args=[query.pk]), {"status": "open", "fully_labeled": "no"})
    assert tracking.status_code == 403
    page = client.get(reverse("label", args=[query.pk])).content.decode()
    assert "locked by staff" in page and 'data-locked="1"' in page
    assert not Label.objects.exists() and Query.objects.get(pk=query.pk).status == Query.Status.OPEN
    client.force_login(labeling["admin"])  # staff may still correct it
    assert client.post(reverse("save-label", args=[query.pk]), body, content_type="application/json").status_code == 200


def test_annotators_set_the_tracking_fields_on_the_labeling_page(ann, labeling):
    query = labeling["query"]
    url = reverse("save-tracking", args=[query.pk])
    response = ann.post(url, {"status": "done", "fully_labeled": "yes", "notes": "all flamingos checked"})
    assert response.status_code == 200 and "Saved." in response.content.decode()
    query.refresh_from_db()
    assert (query.status, query.fully_labeled, query.notes, query.locked) == (
        "done",
        "yes",
        "all flamingos checked",
        False,
    )
    ann.post(url, {"status": "done", "fully_labeled": "yes", "locked": "on"})  # only staff lock
    assert not Query.objects.get(pk=query.pk).locked
    assert ann.post(url, {"status": "finished", "fully_labeled": "yes"}).status_code == 400


def test_guidelines_and_examples_are_shown_beside_the_grid(ann, labeling):
    query = labeling["query"]
    query.guidelines = "Only birds touching the water with the lower bill."
    query.save()
    QueryExample.objects.create(query=query, image_id=3, relevant=True, note="bill in the water")
    QueryExample.objects.create(query=query, image_id=6, relevant=False, note="flying high")
    html = ann.get(reverse("label", args=[query.pk])).content.decode()
    assert "Only birds touching the water with the lower bill." in html
    assert "✓ relevant: bill in the water" in html and "✕ not relevant: flying high" in html
    assert reverse("image-file", args=[3, "thumb"]) in html


def test_labels_are_checked_as_whole_numbers_and_known_images(ann, labeling):
    url = reverse("save-label", args=[labeling["query"].pk])
    for bad in (1.5, True, "1e3", None, 2**64):
        response = ann.post(url, {"image": bad, "value": "relevant"}, content_type="application/json")
        assert response.status_code == 400, bad
    response = ann.post(
        url,
        {"labels": [{"image": 3, "value": "relevant"}, {"image": 999_999, "value": "relevant"}]},
        "application/json",
    )
    assert response.status_code == 404 and "999999" in response.json()["error"]
    assert not Label.objects.exists()  # all or nothing
    many = {"labels": [{"image": 3, "value": "relevant"}, {"image": 6, "value": "unsure"}], "source": "keyboard"}
    assert ann.post(url, many, content_type="application/json").json()["counts"]["labeled"] == 2


def test_per_query_exports_are_named_by_query(client, labeling):
    client.force_login(labeling["admin"])
    query = labeling["query"]
    response = client.get(reverse("download-export", args=["inquire_labels.csv"]), {"query": query.pk})
    assert response["Content-Disposition"] == f'attachment; filename="inquire_labels_q{query.pk}.csv"'
    whole = client.get(reverse("download-export", args=["inquire_labels.csv"]))
    assert whole["Content-Disposition"] == 'attachment; filename="inquire_labels.csv"'
    assert client.get(reverse("download-export", args=["inquire_labels.csv"]), {"query": "²"}).status_code == 400


def test_the_api_root_links_its_schema_and_browsable_docs(ann):
    root = ann.get("/api/", HTTP_ACCEPT="application/json").json()
    assert root["schema"].endswith("/api/schema/") and root["docs"].endswith("/api/docs/")
    docs = ann.get("/api/docs/").content.decode()
    # Served from Quire's own static files: no script or style from another host. (A bare "cdn" test failed
    # when the page's random CSRF token happened to spell it.)
    outside = re.findall(r'(?:src|href)\s*=\s*["\'](?:https?:)?//', docs)
    assert "swagger-ui" in docs and not outside and "cdn.jsdelivr" not in docs and "unpkg.com" not in docs
    assert ann.get("/favicon.ico").status_code == 301


def test_the_query_page_shows_seconds_per_image_per_annotator(client, labeling):
    query = labeling["query"]
    for image_id, lead_time in ((3, 2000), (6, 4000)):
        set_label(
            query_id=query.pk,
            image_id=image_id,
            value=LabelValue.RELEVANT,
            user=labeling["annotator"],
            source=LabelSource.KEYBOARD,
            lead_time_ms=lead_time,
        )
    client.force_login(labeling["admin"])
    html = client.get(reverse("dashboard-query", args=[query.pk])).content.decode()
    assert "2 (2 relevant, 3.0 s per image)" in html


@pytest.mark.django_db(transaction=True)
def test_a_large_projects_dashboard_answers_at_once_and_fills_in_from_the_background(client, labeling, monkeypatch):
    """The completeness signals are never computed in the request (at 1M labels that held the page for 40 s;
    issue 38 dropped the inline budget small projects had): the row says "computing", the background thread
    computes and caches them, and the next visit shows them."""
    from annotator.progress import figures as progress
    from common import background

    query = labeling["query"]
    client.force_login(labeling["admin"])
    ranked = tile_ids(client.get(reverse("label", args=[query.pk]), {"size": "200"}).content.decode())
    for image_id in ranked[:5]:
        set_label(
            query_id=query.pk,
            image_id=image_id,
            value=LabelValue.NOT_RELEVANT,
            user=labeling["admin"],
            source=LabelSource.CLICK,
        )
    background.wait_for_all(timeout=120)  # the label page's own request for its run, at no labels
    computed = []
    original = progress.label_order_signals
    monkeypatch.setattr(progress, "label_order_signals", lambda q: computed.append(q.pk) or original(q))

    def row():
        html = client.get(reverse("dashboard")).content.decode()
        return re.search(rf'<tr data-query-id="{query.pk}">(.*?)</tr>', html, re.S).group(1)

    from django.core.cache import cache

    cache.clear()  # the label page's job ran after the labels were set: it may have cached their run already
    first = row()
    assert "computing…" in first and '<td class="num labeled">5</td>' in first  # counts are there at once
    background.wait_for_all(timeout=120)
    assert computed == [query.pk]  # by the background job, not the request
    second = row()
    assert "computing…" not in second and re.search(r'<td class="num ">5</td>', second)  # the run: 5 not relevant
    assert computed == [query.pk]  # read from the cache, not computed again


def test_the_toolbar_names_the_ranking_in_use(ann, labeling):
    from annotator.methods.registry import MODEL_RANKINGS

    url = reverse("label", args=[labeling["query"].pk])
    for ranking, description in MODEL_RANKINGS.items():
        status = re.search(
            r'<span id="rerank-status"[^>]*>(.*?)</span>', ann.get(f"{url}?ranking={ranking}").content.decode()
        )
        assert status and status.group(1) == f"ranked by {escape(description)}", ranking  # not "like the examples"


def test_sorting_the_dashboard_keeps_its_filters(client, labeling):
    client.force_login(labeling["admin"])
    page = client.get(reverse("dashboard"), {"status": "open", "split": "val", "sort": "id"}).content.decode()
    links = re.findall(r'<a href="\?sort=([^"]+)"', page)
    assert links and all("status=open" in link and "split=val" in link for link in links), links
    plain = client.get(reverse("dashboard")).content.decode()
    assert all("status=" not in link for link in re.findall(r'<a href="\?sort=([^"]+)"', plain))


def test_a_ranking_by_examples_is_not_remembered_for_a_query_without_any(ann, labeling):
    url = reverse("label", args=[labeling["query"].pk])
    assert ann.get(f"{url}?ranking=image").context["state"].ranking == "image"  # asked for: shown (empty)
    assert ann.get(url).context["state"].ranking == "text"  # not remembered: the next visit is not empty
    ann.get(f"{url}?ranking=image&like=5")  # ranked like an image: remembered, and used while it has one
    QueryExample.objects.create(query=labeling["query"], image_id=5, relevant=True)
    assert ann.get(url).context["state"].ranking == "image"


def test_the_side_panes_figures_are_a_fragment_of_their_own(ann, labeling):
    query = labeling["query"]
    for image_id in (5, 6):
        set_label(query_id=query.pk, image_id=image_id, value="not_relevant", user=labeling["annotator"], source="api")
    page = ann.get(reverse("query-figures", args=[query.pk]))
    assert page.status_code == 200 and page.content.decode().startswith('<div id="side-figures"')
    assert 'id="not-relevant-run"' in page.content.decode() and 'id="completeness-box"' in page.content.decode()


@pytest.mark.parametrize("ranking", ["text", "feedback", "rerank"])
def test_a_page_reads_what_the_viewer_sees_once(ann, labeling, monkeypatch, ranking):
    """Issue 38: what the viewer sees of the query's labels (3 to 4 queries, all of its labels) was read up to
    three times a request: by the grid, by its tiles and by "labeled down to". Now once, and passed down."""
    from annotator.labeling import grid
    from annotator.labels import sealed
    from annotator.web import labeling as labeling_views

    query = labeling["query"]
    ranked = tile_ids(ann.get(reverse("label", args=[query.pk])).content.decode())
    set_label(query_id=query.pk, image_id=ranked[0], value="relevant", user=labeling["annotator"], source="click")
    set_label(query_id=query.pk, image_id=ranked[1], value="not_relevant", user=labeling["annotator"], source="click")
    reads = []

    def counted(*args, **kwargs):
        reads.append(args[2] if len(args) > 2 else kwargs.get("image_ids"))
        return sealed.seen_by(*args, **kwargs)

    monkeypatch.setattr(grid, "seen_by", counted)
    monkeypatch.setattr(labeling_views, "seen_by", counted)
    page = ann.get(reverse("label", args=[query.pk]), {"ranking": ranking})
    assert page.status_code == 200
    assert reads == [None], reads  # one read of every label the viewer sees, shared by the grid and the pane
    if ranking == "text":
        assert 'data-label="relevant"' in page.content.decode()  # the tiles still show the labels
