"""Every htmx request that is refused gets an answer the page can show (common/refusals.py): a sentence, or
the fragment its target expects; an ended session answers 401, never the login page."""

import pytest
from django.test import Client
from django.urls import reverse

from annotator.models import Query
from common import refusals

pytestmark = pytest.mark.django_db

HTMX = {"HTTP_HX_REQUEST": "true", "HTTP_HX_CURRENT_URL": "http://testserver/queries/1/?ranking=text"}


@pytest.fixture
def ann(client, labeling):
    client.force_login(labeling["annotator"])
    return client


def test_an_ended_session_answers_htmx_with_a_sentence_not_the_login_page(client, labeling):
    url = reverse("results", args=[labeling["query"].pk]) + "?offset=50"
    response = client.get(url, **HTMX)
    assert response.status_code == 401
    assert response["Content-Type"].startswith("text/plain")
    assert response.content.decode() == refusals.SESSION_ENDED
    assert response["X-Login-Url"] == "/accounts/login/?next=%2Fqueries%2F1%2F%3Franking%3Dtext"
    # Not htmx's: the login redirect, as before.
    assert client.get(url).status_code == 302


def test_a_refusal_drawn_for_the_side_pane_is_marked_to_be_swapped_in(ann, labeling, settings):
    settings.QUIRE_LMM_BASE_URL = ""
    response = ann.post(reverse("start-rerank", args=[labeling["query"].pk]), {"method": "yesno"}, **HTMX)
    assert response.status_code == 409
    assert response[refusals.FRAGMENT_HEADER] == "fragment"
    body = response.content.decode()
    assert body.startswith('<div id="rerank"') and "No vision-language model is configured" in body


def test_a_locked_query_refuses_the_models_in_the_pane(ann, labeling):
    Query.objects.filter(pk=labeling["query"].pk).update(locked=True)
    response = ann.post(reverse("start-rerank", args=[labeling["query"].pk]), {"method": "judges"}, **HTMX)
    assert response.status_code == 403 and response[refusals.FRAGMENT_HEADER] == "fragment"
    assert "locked" in response.content.decode()


@pytest.mark.parametrize(
    "how, status, says",
    [
        ("a plain sentence", 400, "method is one of"),
        ("Django's 404 page", 404, "Not found (404)"),
        ("a bad page request", 400, "whole numbers"),
    ],
)
def test_other_refusals_become_one_short_sentence(ann, labeling, how, status, says):
    query = labeling["query"].pk
    if how == "a plain sentence":
        response = ann.post(reverse("start-rerank", args=[query]), {"method": "nonsense"}, **HTMX)
    elif how == "Django's 404 page":
        response = ann.post(reverse("start-rerank", args=[query + 999]), {"method": "yesno"}, **HTMX)
    else:
        response = ann.get(reverse("results", args=[query]) + "?offset=x", **HTMX)
    assert response.status_code == status
    assert response["Content-Type"].startswith("text/plain")
    assert says in response.content.decode() and "<" not in response.content.decode()


def test_a_stale_csrf_token_says_reload(labeling):
    client = Client(enforce_csrf_checks=True)
    client.force_login(labeling["annotator"])
    response = client.post(reverse("start-rerank", args=[labeling["query"].pk]), {"method": "yesno"}, **HTMX)
    assert response.status_code == 403
    assert "out of date" in response.content.decode()


def test_a_browser_that_lost_every_cookie_is_told_its_session_ended(labeling):
    """No session and no CSRF cookie (the browser's "clear site data"): the CSRF check fails first, and says what
    happened, to the page's fetch() (JSON, as json_login_required answers) and to htmx (a sentence); nothing stored."""
    client = Client(enforce_csrf_checks=True)
    query = labeling["query"]
    body = {"labels": [{"image": 1, "value": "relevant"}]}
    saved = client.post(reverse("save-label", args=[query.pk]), body, content_type="application/json",
                        HTTP_ACCEPT="application/json")  # fmt: skip
    assert saved.status_code == 401
    assert saved.json()["error"] == "Your session ended: log in again."
    assert saved.json()["login_url"].startswith("/accounts/login/?next=")
    htmx = client.post(reverse("start-rerank", args=[query.pk]), {"method": "yesno"}, **HTMX)
    assert htmx.status_code == 401 and htmx.content.decode() == refusals.SESSION_ENDED
    assert htmx["X-Login-Url"] == "/accounts/login/?next=%2Fqueries%2F1%2F%3Franking%3Dtext"
    assert not query.judgments.exists()


def test_sentences_are_kept_short_and_json_errors_read():
    from django.http import HttpResponse, JsonResponse

    long = HttpResponse("x " * 2000, status=400, content_type="text/plain")
    assert len(refusals.sentence_of(long)) == refusals.MAX_SENTENCE
    assert refusals.sentence_of(JsonResponse({"error": "No image 7."}, status=404)) == "No image 7."
    assert refusals.sentence_of(JsonResponse({"detail": "Throttled."}, status=429)) == "Throttled."
    assert "(502)" in refusals.sentence_of(HttpResponse("<html><body>Bad gateway</body></html>", status=502))
