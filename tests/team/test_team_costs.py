"""The team's cost and quality report (annotator.team.costs) on a scripted team whose every figure is known: three
annotators with set lead times (one a 30-minute break), one wrong on known images, one labeling a range, and an
adjudicator deciding where two disagree."""

import json

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.core.management.base import CommandError
from rest_framework.test import APIClient
from sklearn.metrics import cohen_kappa_score

from annotator.labels import LabelChange, adjudicate, set_labels
from annotator.team import costs
from search.facade import search

pytestmark = pytest.mark.django_db
R, N = "relevant", "not_relevant"


@pytest.fixture
def scripted(labeling):
    """Images 0-19 of the ranking judged by ann (always right, 2 s each, one 30-minute break) and bob (4 s each,
    wrong on images 0 and 9); cy labels images 20-24 as one range (no lead times) and image 25 in 3 s; judge
    decides images 0 and 9. The truth: images 0-4 relevant."""
    query = labeling["query"]
    images = [hit.image_id for hit in search(text=query.text, k=26)]
    truth = {image: (R if n < 5 else N) for n, image in enumerate(images)}
    people = {name: User.objects.create_user(name, password="pw") for name in ("bob", "cy", "judge")}
    people["judge"].user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    people = {"ann": labeling["annotator"], **{name: User.objects.get(pk=user.pk) for name, user in people.items()}}

    def judge(name, changes, source="keyboard"):
        set_labels(query_id=query.pk, changes=changes, user=people[name], source=source)

    for n, image in enumerate(images[:20]):
        judge("ann", [LabelChange(image, truth[image], 30 * 60 * 1000 if n == 7 else 2000)])
        wrong = {R: N, N: R}[truth[image]] if n in (0, 9) else truth[image]
        judge("bob", [LabelChange(image, wrong, 4000)], source="click")
    judge("cy", [LabelChange(image, N) for image in images[20:25]])  # a range: Shift and a key, no lead times
    judge("cy", [LabelChange(images[25], N, 3000)])
    for image in (images[0], images[9]):
        adjudicate(query_id=query.pk, image_id=image, value=truth[image], user=people["judge"])
    return {**labeling, "people": people, "images": images, "truth": truth}


def rows_by(figures, key):
    return {row[key]: row for row in figures}


def test_every_figure_is_what_the_script_knows(scripted):
    report = costs.report()
    people = rows_by(report["annotators"], "annotator")
    assert set(people) == {"ann", "bob", "cy"}  # the adjudicator gave no judgment of their own
    ann, bob, cy = people["ann"], people["bob"], people["cy"]
    # Time: ann's break counts as the cap (60 s), not 30 minutes.
    assert (ann["labels"], ann["actions"], ann["active_seconds"], ann["seconds_per_label"]) == (20, 20, 98.0, 2.0)
    assert (bob["labels"], bob["actions"], bob["active_seconds"], bob["seconds_per_label"]) == (20, 20, 80.0, 4.0)
    assert ann["mean_seconds_per_label"] == pytest.approx(98 / 20)
    # cy's range of five is one action; their one timed label is their time.
    assert (cy["labels"], cy["actions"], cy["active_seconds"], cy["seconds_per_label"], cy["timed_labels"]) == (
        6,
        2,
        3.0,
        3.0,
        1,
    )
    # Labels per positive found: ann found all five, bob four (he called image 0 not relevant).
    assert (ann["labels_per_positive"], bob["labels_per_positive"], cy["labels_per_positive"]) == (4.0, 5.0, None)
    # Quality: bob disagrees with the final label on his two mistakes, both overturned by the adjudicator.
    assert (ann["agreement_with_final"], ann["items"], bob["agreement_with_final"]) == (1.0, 20, 0.9)
    assert (ann["first_pass_acceptance"], bob["first_pass_acceptance"]) == (1.0, 0.9)
    assert (ann["overturned"], ann["overturn_rate"], bob["overturned"], bob["overturn_rate"]) == (0, 0.0, 2, 1.0)
    assert (cy["agreement_with_final"], cy["items"], cy["overturn_rate"]) == (None, 0, None)  # nothing to say
    assert ann["kappa_vs_gold"] is None and ann["gold_items"] == 2  # under KAPPA_LEAST adjudicated images
    assert ann["accuracy_dawid_skene"] >= bob["accuracy_dawid_skene"]
    (query,) = report["queries"]
    assert (query["query"], query["labels"], query["actions"], query["active_seconds"]) == (
        scripted["query"].pk,
        46,
        42,
        181.0,
    )
    assert (query["seconds_per_label"], query["positives"], query["labels_per_positive"]) == (4.0, 5, 9.2)


def test_kappa_against_gold_is_scikit_learns(scripted, monkeypatch):
    monkeypatch.setattr(costs, "KAPPA_LEAST", 2)
    people = rows_by(costs.report(dawid_skene=False)["annotators"], "annotator")
    images, truth = scripted["images"], scripted["truth"]
    gold = [truth[images[0]], truth[images[9]]]
    bob_votes = [{R: N, N: R}[value] for value in gold]
    assert people["bob"]["kappa_vs_gold"] == pytest.approx(cohen_kappa_score(bob_votes, gold, labels=[N, R]))
    assert people["ann"]["kappa_vs_gold"] == pytest.approx(cohen_kappa_score(gold, gold, labels=[N, R]))
    assert people["bob"]["accuracy_dawid_skene"] is None  # not asked for


def test_a_longer_idle_cap_counts_the_break_as_work(scripted, settings):
    settings.QUIRE_IDLE_CAP_SECONDS = 3600
    ann = rows_by(costs.report(dawid_skene=False)["annotators"], "annotator")["ann"]
    assert ann["active_seconds"] == 19 * 2 + 30 * 60


def test_the_api_gives_staff_every_row_and_an_annotator_only_their_own(scripted, django_capture_on_commit_callbacks):
    staff, ann = APIClient(), APIClient()
    staff.force_authenticate(scripted["admin"])
    ann.force_authenticate(scripted["people"]["ann"])
    with django_capture_on_commit_callbacks(execute=True):
        first = staff.get("/api/team/annotators/")
    assert first.status_code == 202 and first.json()["computing"] is True  # computed outside the request
    costs.refresh(None)  # what annotator.team_report runs in the background
    every = staff.get("/api/team/annotators/").json()["results"]
    assert [row["annotator"] for row in every] == ["ann", "bob", "cy"]
    assert every == costs.report()["annotators"]
    assert staff.get("/api/team/queries/").json()["results"] == costs.report()["queries"]
    assert staff.get("/api/team/queries/", {"query": scripted["query"].pk}).status_code == 202  # its own report
    costs.refresh(scripted["query"].pk)
    assert (
        staff.get("/api/team/queries/", {"query": scripted["query"].pk}).json()["results"] == costs.report()["queries"]
    )
    own = ann.get("/api/team/annotators/").json()["results"]
    assert [row["annotator"] for row in own] == ["ann"] and own[0]["labels"] == 20
    refused = ann.get("/api/team/queries/")
    assert refused.status_code == 403 and "staff" in refused.json()["detail"]
    for bad in ("x", "1.5", "²", "-1"):
        assert staff.get("/api/team/annotators/", {"query": bad}).status_code == 400
    assert staff.get("/api/team/annotators/", {"query": 999999}).status_code == 404


def test_the_command_prints_the_same_rows(scripted, capsys):
    call_command("team_report", "--json")
    printed = json.loads(capsys.readouterr().out)
    assert printed["annotators"] == costs.report()["annotators"] and printed["queries"] == costs.report()["queries"]
    call_command("team_report")
    table = capsys.readouterr().out
    assert "a lead time over 60 s counts as 60 s" in table and "ann" in table and "1m38s" in table
    call_command("team_report", "--json", "--since", "2999-01-01")
    late = json.loads(capsys.readouterr().out)
    assert rows_by(late["annotators"], "annotator")["ann"]["active_seconds"] == 0
    with pytest.raises(CommandError, match="--since is a day"):
        call_command("team_report", "--since", "yesterday")
    with pytest.raises(CommandError, match="unknown query id"):
        call_command("team_report", "--query", "999999")


@pytest.mark.parametrize("world", ["relevant", "not_relevant"])
def test_a_viewer_who_judges_blind_reads_the_same_whatever_the_others_voted(scripted, world):
    """Bob (staff) and ann share an overlap sample still sealed: ann's votes on it change nothing bob reads, the
    report computed or not (the blind walk of tests/team/test_blind_everywhere.py clears caches; this fills them)."""
    from annotator.models import OverlapImage, Query

    query, images = scripted["query"], scripted["images"]
    Query.objects.filter(pk=query.pk).update(judgments_wanted=3)
    sample = images[26:30] if len(images) > 29 else [hit.image_id for hit in search(text=query.text, k=40)][30:34]
    OverlapImage.objects.bulk_create([OverlapImage(query=query, image_id=image) for image in sample])
    set_labels(
        query_id=query.pk, changes=[LabelChange(i, world) for i in sample], user=scripted["annotator"], source="click"
    )
    bob = APIClient()
    bob.force_authenticate(User.objects.get(username="bob"))
    bob_user = User.objects.get(username="bob")
    bob_user.user_permissions.add(Permission.objects.get(codename="view_label"))
    bob.force_authenticate(User.objects.get(pk=bob_user.pk))
    costs.refresh(None)
    for route in ("/api/team/annotators/", "/api/team/queries/"):
        answer = bob.get(route)
        assert answer.status_code == 200 and answer.json()["results"] == []
        assert answer.json()["withheld"].startswith("Hidden while")


def test_the_page_the_cost_line_and_the_exports(scripted, client):
    client.force_login(scripted["admin"])
    computing = client.get("/dashboard/team/").content.decode()
    assert "being computed in the background" in computing and 'hx-trigger="load delay:2s"' in computing
    costs.refresh(None)
    page = client.get("/dashboard/team/", {"sort": "-seconds_per_label"}).content.decode()
    order = [page.index(f'data-annotator="{name}"') for name in ("bob", "cy", "ann")]
    assert order == sorted(order)  # slowest first: bob 4 s, cy 3 s, ann 2 s
    assert '<svg xmlns="http://www.w3.org/2000/svg" id="seconds-per-label"' in page and "1m38s" in page
    assert client.get("/dashboard/team/", {"sort": "<script>"}).status_code == 200  # unknown: the default order
    query = scripted["query"]
    assert 'Cost: <span class="pending"' in client.get(f"/dashboard/{query.pk}/").content.decode()
    costs.refresh(query.pk)
    line = client.get(f"/dashboard/{query.pk}/").content.decode()
    assert "Cost: 3 min active, 46 labels (42 actions), 4.0 s per label, 5 positives, 9.2 labels per positive" in line
    exported = b"".join(client.get("/exports/team.csv").streaming_content).decode().splitlines()
    assert exported[0].startswith("row,name,labels,actions,active_seconds") and len(exported) == 1 + 3 + 1
    assert exported[1].startswith("annotator,ann,20,20,98.0,2.0,")
    assert client.get("/exports/team.json").json()["annotators"] == costs.report()["annotators"]
    client.force_login(scripted["people"]["ann"])
    assert client.get("/dashboard/team/").status_code == 403


def test_a_release_states_what_it_cost_and_the_teams_quality(scripted, settings, tmp_path):
    from annotator.releases import publish as releases

    settings.QUIRE_DATA_DIR = tmp_path / "data"
    folder = tmp_path / "data" / "releases" / "v1"
    releases.create("v1")
    expected = costs.benchmark_sentence(costs.report(dawid_skene=False))
    assert expected.startswith("Cost: 0.1 hours of active labeling (lead times capped at 60 s) for 46 judgments in 42")
    assert "median agreement with the final label 0.950" in expected and "2 votes overturned" in expected
    assert expected in (folder / "README.md").read_text(encoding="utf-8")
    croissant = json.loads((folder / "croissant.json").read_text(encoding="utf-8"))
    analysis = croissant["rai:dataAnnotationAnalysis"]
    assert expected in (analysis if isinstance(analysis, list) else [analysis])


def test_the_team_report_for_a_query_where_one_annotator_used_one_value_and_another_two(labeling, client):
    """Issue 63: /exports/team.json?query=N answered 500 (crowd-kit's error table had no row for a value one
    annotator never used), and the background report raised the same, so the pages said "computing" for good."""
    query, ann, admin = labeling["query"], labeling["annotator"], labeling["admin"]
    bob = User.objects.create_user("bob", password="pw")
    images = [hit.image_id for hit in search(text=query.text, k=10)]
    set_labels(query_id=query.pk, changes=[LabelChange(i, R) for i in images], user=ann, source="keyboard")
    bob_says = [LabelChange(i, R if n % 3 else N) for n, i in enumerate(images)]
    set_labels(query_id=query.pk, changes=bob_says, user=bob, source="keyboard")
    client.force_login(admin)
    assert client.get(f"/exports/team.json?query={query.pk}").status_code == 202  # being computed (issue 65)
    costs.refresh(query.pk)  # the background half: no exception, the figures cached
    for path in (f"/exports/team.json?query={query.pk}", f"/exports/team.csv?query={query.pk}"):
        answer = client.get(path)
        assert answer.status_code == 200, path
        body = b"".join(answer.streaming_content) if answer.streaming else answer.content
        assert b"ann" in body and b"bob" in body
    rows = APIClient()
    rows.force_authenticate(admin)
    found = rows.get(f"/api/team/annotators/?query={query.pk}").json()["results"]
    assert {row["annotator"] for row in found} == {"ann", "bob"}
    assert all(row["accuracy_dawid_skene"] is not None for row in found)


def test_a_team_report_that_cannot_be_computed_says_so_instead_of_computing(labeling, client, monkeypatch):
    query, admin = labeling["query"], labeling["admin"]

    def broken(*args, **kwargs):
        raise ValueError("a figure came out as NaN")

    monkeypatch.setattr(costs, "report", broken)
    with pytest.raises(ValueError):
        costs.refresh(query.pk)  # the job itself still fails, for the worker's record
    api = APIClient()
    api.force_authenticate(admin)
    answer = api.get(f"/api/team/queries/?query={query.pk}")
    assert answer.status_code == 200 and answer.json()["failed"] is True
    assert "could not be computed (ValueError: a figure came out as NaN)" in answer.json()["detail"]
    client.force_login(admin)
    page = client.get(f"/dashboard/{query.pk}/").content.decode()
    assert "could not be computed (ValueError: a figure came out as NaN)" in page


def test_the_plot_of_seconds_per_label_reads_its_top_and_draws_nothing_untimed():
    """Issue 64: the team page's plot topped its axis at "0.0 s" (labels that took well under a tenth of a second on
    average, or none timed)."""
    from annotator.web import team_plot as plot

    assert plot.seconds_per_label([{"annotator": "ann", "day": "2026-11-28", "seconds_per_label": 0.0}]) == ""
    assert plot.seconds_per_label([{"annotator": "ann", "day": "2026-11-28", "seconds_per_label": None}]) == ""
    quick = plot.seconds_per_label([{"annotator": "ann", "day": "2026-11-28", "seconds_per_label": 0.04}])
    assert ">0.04 s</text>" in quick and ">0.0 s<" not in quick
    slow = plot.seconds_per_label([{"annotator": "ann", "day": "2026-11-28", "seconds_per_label": 98.25}])
    assert ">98.2 s</text>" in slow or ">98.3 s</text>" in slow
