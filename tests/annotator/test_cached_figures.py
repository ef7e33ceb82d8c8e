"""Figures computed in the background share one helper (common/cached_figures.py) and one cheap marker of the labels
(QueryTally.changes) instead of a COUNT and a MAX over every judgment on each poll (issue 65)."""

import pytest
from django.contrib.auth.models import Permission, User
from django.db import connection
from django.test.utils import CaptureQueriesContext

from annotator.labels import LabelChange, adjudicate, clear_label, clear_labels, set_labels
from annotator.labels.tallies import change_marker, recount
from annotator.models import Label
from annotator.team import costs, panel
from common.cached_figures import BackgroundFigure
from search.facade import search

pytestmark = pytest.mark.django_db


def test_the_marker_moves_with_every_write_and_never_back(labeling):
    query, ann = labeling["query"], labeling["annotator"]
    top = [hit.image_id for hit in search(text=query.text, k=3)]
    seen = [change_marker([query.pk])]

    def moved() -> None:
        seen.append(change_marker([query.pk]))
        assert int(seen[-1].split("-")[0]) > int(seen[-2].split("-")[0]), seen

    set_labels(query_id=query.pk, changes=[LabelChange(top[0], "relevant")], user=ann, source="keyboard")
    moved()
    set_labels(query_id=query.pk, changes=[LabelChange(top[0], "not_relevant")], user=ann, source="keyboard")
    moved()  # a judgment changed: no count moved, the marker did
    bob = User.objects.create_user("bob", password="pw-bob-1")
    set_labels(query_id=query.pk, changes=[LabelChange(top[0], "relevant")], user=bob, source="keyboard")
    moved()
    judge = User.objects.create_user("judge", password="pw-judge-1")
    judge.user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    adjudicate(query_id=query.pk, image_id=top[0], value="relevant", user=User.objects.get(pk=judge.pk))
    moved()
    assert clear_label(query_id=query.pk, image_id=top[0], user=bob, source="keyboard")  # Bob withdraws his vote
    moved()
    clear_labels(Label.objects.filter(query=query), user=labeling["admin"], source="admin")  # staff clear it all
    moved()
    recount([query.pk])  # the tallies counted again: the marker goes on, never back to a value a figure knew
    moved()
    assert change_marker(None) == change_marker([query.pk])  # the only query: the same mark


def test_a_figure_is_asked_for_once_cached_then_read(settings, django_capture_on_commit_callbacks):
    from django.core.cache import cache

    cache.clear()
    settings.CELERY_TASK_ALWAYS_EAGER = False  # a broker: a poll sends the task at most once a minute
    figure = BackgroundFigure("probe", "annotator.refresh_progress")
    with django_capture_on_commit_callbacks() as sent:
        assert figure.cached((1, 7), (1,)) == (False, None)
        assert figure.cached((1, 7), (1,)) == (False, None)
    assert len(sent) == 1
    figure.store((1, 7), None)  # a None value is a value
    assert figure.cached((1, 7), (1,)) == (True, None)
    assert figure.peek((1, 8)) == (False, None)  # another marker: another key
    assert figure.computed((1, 8), lambda: {"run": 3}) == {"run": 3}
    assert figure.peek_many({1: (1, 8), 2: (2, 8)}) == {1: (True, {"run": 3}), 2: (False, None)}


@pytest.mark.parametrize(
    "parts", [lambda q: panel._parts(q.pk), lambda q: costs._parts((q.pk,)), lambda q: costs._parts(None)]
)
def test_a_poll_reads_one_tally_not_every_judgment(labeling, parts):
    query = labeling["query"]
    top = [hit.image_id for hit in search(text=query.text, k=5)]
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in top], user=labeling["annotator"],
               source="keyboard")  # fmt: skip
    with CaptureQueriesContext(connection) as asked:
        parts(query)
    assert len(asked.captured_queries) == 1
    assert "annotator_querytally" in asked.captured_queries[0]["sql"]
    assert "annotator_judgment" not in asked.captured_queries[0]["sql"]
