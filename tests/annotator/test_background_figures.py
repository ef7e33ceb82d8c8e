"""Issue 21, item 3: no heavy work in a request. The not-relevant run (a ranking of every label) and an uploaded
example's CLIP vector are computed by the background path; the pages say "computing" (or
"embedding") and poll until the result is stored."""

import io
import re

import numpy as np
import pytest
from django.urls import reverse
from PIL import Image as PILImage

from annotator.labeling import examples
from annotator.labeling import grid as ranking_page
from annotator.labels import set_label
from annotator.models import LabelValue, QueryExample
from annotator.progress import figures as progress
from search.facade import configured_spec, embed_image

pytestmark = pytest.mark.django_db


@pytest.fixture
def ann(client, labeling):
    client.force_login(labeling["annotator"])
    return client


def tile_ids(html: str) -> list[int]:
    return [int(i) for i in re.findall(r'data-image-id="(\d+)"', html)]


def label_top(labeling, values):
    query = labeling["query"]
    ranked = labeling_ranking(query)
    for image_id, value in zip(ranked, values, strict=False):
        set_label(query_id=query.pk, image_id=image_id, value=value, user=labeling["annotator"], source="click")


def labeling_ranking(query):
    return [hit.image_id for hit in ranking_page.candidates(query, viewer=None, strategy="text", k=100)]


def test_the_old_recall_estimate_is_on_no_page_and_not_computed(
    ann, labeling, client, monkeypatch, django_capture_on_commit_callbacks
):
    """Issue 39: the point estimate overstated completeness under annotator mistakes (bench/RESULTS.md), so it left
    the pages; the completeness claim stands in its place, and nothing computes the estimate for a page."""
    query = labeling["query"]
    label_top(labeling, [LabelValue.RELEVANT] * 6 + [LabelValue.NOT_RELEVANT] * 30)
    computed = []
    monkeypatch.setattr(progress, "recall_estimate", lambda *args: computed.append(args))
    client.force_login(labeling["admin"])
    pages = [
        ann.get(reverse("label", args=[query.pk])).content.decode(),
        ann.get(reverse("query-figures", args=[query.pk])).content.decode(),
        client.get(reverse("dashboard")).content.decode(),
        client.get(reverse("dashboard-query", args=[query.pk])).content.decode(),
        ann.get(reverse("home")).content.decode(),
    ]
    progress.refresh([query.pk])  # what the background job runs
    for page in pages:
        assert "recall-estimate" not in page and "(est.)" not in page and "found (estimate)" not in page
    assert 'id="completeness-status">no check yet<' in pages[0] and 'id="completeness-next"' in pages[1]
    assert "no check" in pages[2]
    assert computed == []


def test_no_label_is_scored_in_a_request_on_a_cold_cache(
    ann, labeling, monkeypatch, client, django_capture_on_commit_callbacks
):
    """Issue 38: the labeling page, its figures fragment and the query's dashboard page ranked every label of
    the query inside the request on a cache miss, and every save moves the cache key, so every refresh did."""
    from django.core.cache import cache

    query = labeling["query"]
    label_top(labeling, [LabelValue.NOT_RELEVANT] * 12)
    scored = []
    original = progress.ranked_label_values
    monkeypatch.setattr(progress, "ranked_label_values", lambda q: scored.append(q.pk) or original(q))
    cache.clear()
    with django_capture_on_commit_callbacks() as sent:
        page = ann.get(reverse("label", args=[query.pk])).content.decode()
        figures = ann.get(reverse("query-figures", args=[query.pk])).content.decode()
    assert scored == [] and sent  # nothing scored here; the background was asked
    for html in (page, figures):
        run = re.search(r'<strong id="not-relevant-run">.*?</strong>', html, re.S).group(0)
        assert "computing…" in run
    assert f'hx-get="/queries/{query.pk}/figures"' in figures  # the pane polls until the run is cached
    labeling["admin"].refresh_from_db()
    client.force_login(labeling["admin"])
    assert "computing…" in client.get(reverse("dashboard-query", args=[query.pk])).content.decode()
    assert scored == []

    progress.refresh([query.pk])  # what the background job annotator.refresh_progress runs
    assert scored == [query.pk]
    figures = ann.get(reverse("query-figures", args=[query.pk])).content.decode()
    assert re.search(r'<strong id="not-relevant-run">12</strong>', figures) and "hx-get" not in figures.split(">")[0]
    assert scored == [query.pk]


def test_the_check_fragments_answer_404_for_an_unknown_query_and_need_a_login(client, ann):
    assert ann.get("/queries/999999/completeness/cost").status_code == 404
    client.logout()
    assert client.get("/queries/1/completeness/cost").status_code == 302


def _png(colour=(10, 120, 200)) -> io.BytesIO:
    data = io.BytesIO()
    PILImage.new("RGB", (40, 30), colour).save(data, "PNG")
    data.seek(0)
    data.name = "photo.png"
    return data


def test_an_upload_is_kept_at_once_and_embedded_by_the_background(ann, labeling, django_capture_on_commit_callbacks):
    query = labeling["query"]
    with django_capture_on_commit_callbacks() as sent:
        response = ann.post(reverse("upload-example", args=[query.pk]), {"image": _png(), "note": "wings out"})
    assert response.status_code == 302 and response["Location"].endswith("?ranking=fusion")
    example = QueryExample.objects.get(query=query)
    assert example.vector is None and example.embedding and len(sent) == 1  # CLIP did not run in the request

    page = ann.get(response["Location"]).content.decode()
    assert "(embedding…)" in page and 'id="examples-embedding"' in page
    assert ranking_page.EMBEDDING_EXAMPLE in page  # the fused ranking waits for its example, and says so
    assert ann.get(reverse("examples-embedding", args=[query.pk])).status_code == 204  # still waiting

    assert examples.embed(example.pk) == "embedded"  # the task annotator.embed_example
    example.refresh_from_db()
    with PILImage.open(example.upload.path) as kept:
        expected_vector = embed_image(kept.convert("RGB"))
    assert np.array_equal(np.frombuffer(bytes(example.vector), dtype=np.float32), expected_vector)
    assert example.vector_model == configured_spec().name and not example.embedding
    assert examples.embed(example.pk) == "embedded"  # run twice: nothing changes
    done = ann.get(reverse("examples-embedding", args=[query.pk]))
    assert done.status_code == 200 and done["HX-Refresh"] == "true"  # htmx reloads the page
    page = ann.get(response["Location"]).content.decode()
    assert "(embedding…)" not in page and 'id="examples-embedding"' not in page
    expected = [hit.image_id for hit in ranking_page.candidates(query, viewer=None, strategy="fusion", k=50)]
    assert tile_ids(page) == expected and expected != labeling_ranking(query)[:50]


def test_an_upload_that_cannot_be_embedded_says_why_beside_it(ann, labeling, django_capture_on_commit_callbacks):
    query = labeling["query"]
    with django_capture_on_commit_callbacks():
        ann.post(reverse("upload-example", args=[query.pk]), {"image": _png()})
    example = QueryExample.objects.get(query=query)
    with open(example.upload.path, "wb") as file:  # the stored file lost (a disk fault, a bad restore)
        file.write(b"not a picture any more")
    assert examples.embed(example.pk) == "failed"
    example.refresh_from_db()
    assert example.embedding_error == "This example's stored file could not be read as an image: upload it again."
    page = ann.get(reverse("label", args=[query.pk])).content.decode()
    assert "stored file could not be read as an image: upload it again." in page
    assert "(embedding…)" not in page and 'id="examples-embedding"' not in page
    assert examples.embed(999_999) == "gone"


def test_an_example_whose_job_was_lost_is_sent_again_by_the_page(ann, labeling, django_capture_on_commit_callbacks):
    """After a crash (or an upload in the admin, which sends no job) the labeling page sends the job."""
    query = labeling["query"]
    with django_capture_on_commit_callbacks():
        ann.post(reverse("upload-example", args=[query.pk]), {"image": _png()})  # its job is never run
    with django_capture_on_commit_callbacks(execute=False) as sent:
        assert ann.get(reverse("examples-embedding", args=[query.pk])).status_code == 204
    assert len(sent) == 1


def test_with_a_broker_a_polled_job_is_sent_once_a_minute_not_on_every_poll(
    settings, django_capture_on_commit_callbacks
):
    """background.submit_when_polled: the side pane polls every two seconds; a worker must not get a job each time."""
    from django.core.cache import cache

    from common import background

    cache.clear()
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker: sends are claimed in the shared cache
    with django_capture_on_commit_callbacks() as sent:
        for _ in range(3):
            background.submit_when_polled("annotator.refresh_progress", 1, key="poll-test")
        background.submit_when_polled("annotator.refresh_progress", 2, key="poll-test-other")
    assert len(sent) == 2  # one per key
    settings.CELERY_TASK_ALWAYS_EAGER = True  # embedded: the background thread keeps a job once by itself
    with django_capture_on_commit_callbacks() as sent:
        for _ in range(3):
            background.submit_when_polled("annotator.refresh_progress", 1, key="poll-test")
    assert len(sent) == 3


def test_the_same_upload_sent_twice_keeps_one_example(ann, labeling):
    """Issue 64: a double click on "Upload and rank like it" stored the example twice (the guide: a second click
    while it is sent does nothing). The page drops the second request; the server keeps one example of one file."""
    query = labeling["query"]
    for _ in range(2):
        assert ann.post(reverse("upload-example", args=[query.pk]), {"image": _png()}).status_code == 302
    assert QueryExample.objects.filter(query=query).count() == 1
    ann.post(reverse("upload-example", args=[query.pk]), {"image": _png((200, 10, 10))})  # another image: kept
    assert QueryExample.objects.filter(query=query).count() == 2
    page = ann.get(reverse("label", args=[query.pk])).content.decode()
    assert 'hx-sync="this:drop" hx-disabled-elt="find button"' in page


@pytest.mark.django_db(transaction=True)  # as a server runs: no test transaction holding the sends back
def test_with_the_queue_away_the_pages_say_why_and_write_nothing(ann, labeling, monkeypatch):
    """Issue 65: the labeling page and its poll wrote the queue's refusal onto the example (a GET that wrote), and
    the example was never sent again. Now they say it, write nothing, and the next poll sends it once the queue is
    back."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from common import background

    query = labeling["query"]
    away = "The job was not started: the queue (Redis) did not answer."
    sent = []

    def unavailable(task, *args):
        raise background.QueueUnavailable(away)

    monkeypatch.setattr(background, "submit", unavailable)
    ann.post(reverse("upload-example", args=[query.pk]), {"image": _png()})
    with CaptureQueriesContext(connection) as asked:
        page = ann.get(reverse("label", args=[query.pk])).content.decode()
        polled = ann.get(reverse("examples-embedding", args=[query.pk]))
    writes = [q["sql"] for q in asked if q["sql"].split()[0].upper() in {"INSERT", "UPDATE", "DELETE"}]
    assert not [sql for sql in writes if "django_session" not in sql], writes
    assert f"Your example cannot be embedded now: {away} The page asks again by itself." in page
    assert polled.status_code == 200 and polled.content.decode().startswith("Your example cannot be embedded now")
    example = QueryExample.objects.get(query=query)
    assert example.embedding_error == "" and example.vector is None  # still waiting, nothing written down

    monkeypatch.setattr(background, "submit", lambda task, *args: sent.append((task, *args)))  # the queue is back
    assert ann.get(reverse("examples-embedding", args=[query.pk])).status_code == 204
    assert sent == [("annotator.embed_example", example.pk)]
