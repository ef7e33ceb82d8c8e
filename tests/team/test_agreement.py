"""Agreement figures equal the reference implementations (krippendorff.alpha, scikit-learn's cohen_kappa_score)
on hand-made judgments: two annotators on one query, one annotator alone (figures null), three on another,
and unsure judgments (not votes)."""

import json
from io import StringIO

import krippendorff
import numpy as np
import pytest
from django.contrib.auth.models import User
from django.core.management import CommandError, call_command
from sklearn.metrics import cohen_kappa_score

from annotator.labels import LabelChange, adjudicate, set_labels
from annotator.models import Query
from annotator.team import agreement
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db

R, N, U = "relevant", "not_relevant", "unsure"
# query id -> image id -> {annotator: value}
JUDGMENTS = {
    1: {
        1000: {"ann": R, "bob": R},
        1001: {"ann": R, "bob": N},
        1002: {"ann": N, "bob": N},
        1003: {"ann": N, "bob": N},
        1004: {"ann": R, "bob": U},  # one vote: no item
        1005: {"ann": U, "bob": U},  # no vote
    },
    2: {1000: {"ann": R}, 1001: {"ann": N}, 1002: {"ann": U}},  # one annotator only
    3: {
        1000: {"ann": R, "bob": R, "cy": N},
        1001: {"ann": N, "bob": N, "cy": N},
        1002: {"ann": R, "bob": R, "cy": R},
    },
}


@pytest.fixture
def judged(write_json):
    import_inat(write_json(inat_document(images=6)))
    users = {name: User.objects.create(username=name) for name in ("ann", "bob", "cy")}
    for query_id, images in JUDGMENTS.items():
        Query.objects.create(id=query_id, text=f"query {query_id}")
        for name, user in users.items():
            changes = [LabelChange(image, by[name]) for image, by in images.items() if name in by]
            if changes:
                set_labels(query_id=query_id, changes=changes, user=user, source="keyboard")
    return users


def run(*args) -> dict:
    out = StringIO()
    call_command("agreement", "--json", "--resamples", "200", *args, stdout=out)
    return json.loads(out.getvalue())


def coded(values):
    return [np.nan if v is None else {R: 1, N: 0}[v] for v in values]


def test_per_query_figures_equal_the_reference_implementations(judged):
    figures = run()
    first = figures["queries"]["1"]
    ann, bob = [R, R, N, N], [R, N, N, N]  # the four images both voted on
    assert first["items"] == 4
    assert first["percent_agreement"] == pytest.approx(0.75)
    assert first["cohen_kappa"] == pytest.approx(cohen_kappa_score(ann, bob), abs=1e-4)
    reference = krippendorff.alpha(reliability_data=[coded(ann), coded(bob)], level_of_measurement="nominal")
    assert first["krippendorff_alpha"] == pytest.approx(reference, abs=1e-4)
    low, high = first["krippendorff_alpha_interval"]
    assert low <= high

    alone = figures["queries"]["2"]
    assert alone == {
        "items": 0,
        "percent_agreement": None,
        "cohen_kappa": None,
        "krippendorff_alpha": None,
        "percent_agreement_interval": None,
        "krippendorff_alpha_interval": None,
    }

    three = figures["queries"]["3"]
    assert three["items"] == 3 and three["cohen_kappa"] is None  # kappa is for two annotators
    assert three["percent_agreement"] == pytest.approx((1 / 3 + 1 + 1) / 3, abs=1e-4)
    data = [coded([R, N, R]), coded([R, N, R]), coded([N, N, R])]
    assert three["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-4
    )


def test_overall_figures_pool_every_querys_items(judged):
    overall = run()["overall"]
    assert set(overall) == {
        "items", "percent_agreement", "krippendorff_alpha", "percent_agreement_interval", "krippendorff_alpha_interval"
    }  # fmt: skip
    # ann, bob, cy over query 1's four items and query 3's three (cy judged only query 3)
    data = [
        coded([R, R, N, N, R, N, R]),
        coded([R, N, N, N, R, N, R]),
        coded([None, None, None, None, N, N, R]),
    ]
    assert overall["items"] == 7
    assert overall["krippendorff_alpha"] == pytest.approx(
        krippendorff.alpha(reliability_data=data, level_of_measurement="nominal"), abs=1e-4
    )


def test_each_annotator_against_the_final_labels(judged):
    annotators = run()["annotators"]
    # ann and bob agree with every final that rests on two votes (query 1's split image is undecided: left
    # out); cy was outvoted once in query 3. Single votes (query 2) prove nothing and are left out.
    assert annotators["ann"] == {"items": 6, "agreement_with_final": 1.0}
    assert annotators["cy"] == {"items": 3, "agreement_with_final": pytest.approx(2 / 3, abs=1e-4)}
    staff = User.objects.create(username="judge", is_superuser=True)
    adjudicate(query_id=1, image_id=1001, value=N, user=staff)
    after = run()["annotators"]
    assert after["ann"] == {"items": 7, "agreement_with_final": pytest.approx(6 / 7, abs=1e-4)}
    assert after["bob"] == {"items": 7, "agreement_with_final": 1.0}


def test_unsure_is_not_a_vote(judged):
    votes = agreement.votes_of([(1004, "ann", R), (1004, "bob", U), (1005, "ann", U), (1005, "bob", U)])
    assert votes == {}


def test_a_query_subset_and_dawid_skene(judged):
    out = StringIO()
    call_command("agreement", "--query", "3", "--json", "--resamples", "0", "--dawid-skene", stdout=out)
    figures = json.loads(out.getvalue())
    assert list(figures["queries"]) == ["3"]
    assert figures["queries"]["3"]["krippendorff_alpha_interval"] is None  # no resamples asked
    accuracy = {name: row["dawid_skene_accuracy"] for name, row in figures["annotators"].items()}
    assert set(accuracy) == {"ann", "bob", "cy"}
    assert accuracy["cy"] < accuracy["ann"] <= 1.0  # cy is the one outvoted


def test_the_table_and_bad_arguments(judged):
    out = StringIO()
    call_command("agreement", "--resamples", "20", stdout=out)
    assert "overall: 7 items" in out.getvalue() and "Unsure is not a vote" in out.getvalue()
    with pytest.raises(CommandError, match="unknown query id"):
        call_command("agreement", "--query", "99")
    with pytest.raises(CommandError, match="--resamples must be"):
        call_command("agreement", "--resamples", "-1")


def test_the_bootstrap_interval_brackets_the_figure_on_noisy_annotators():
    # Two annotators who each get 5% of 400 images wrong: agreement near 0.9, its interval tight around it.
    rng = np.random.default_rng(3)
    truth = rng.random(400) < 0.3
    rows = []
    for name in ("ann", "bob"):
        wrong = rng.random(400) < 0.05
        rows += [(i, name, R if (t != w) else N) for i, (t, w) in enumerate(zip(truth, wrong, strict=True))]
    figures = agreement.reliability(agreement.votes_of(rows), resamples=300)
    low, high = figures.krippendorff_alpha_interval
    assert low < figures.krippendorff_alpha < high and high - low < 0.2
    assert 0.8 < figures.percent_agreement < 0.95


def test_the_judge_panel_is_scored_against_double_labeled_images(judged):
    from annotator.models import PreLabel, RerankJob

    query = Query.objects.get(pk=3)
    job = RerankJob.objects.create(query=query, method="judges", model="panel", status="done")
    # Query 3's finals: 1000 relevant (majority), 1001 not relevant (agreed), 1002 relevant (agreed).
    verdicts = {1000: "accept", 1001: "accept", 1002: "accept", 1003: "reject", 1004: "abstain"}
    for rank, (image_id, verdict) in enumerate(verdicts.items(), start=1):
        PreLabel.objects.create(
            query=query, image_id=image_id, job=job, value=verdict, confidence=1.0, votes=[], clip_rank=rank
        )
    scored = agreement.judge_panel(query)
    # 1003 and 1004 have no final label two people stand behind; abstentions never count.
    assert scored["items"] == 3
    assert scored["percent_agreement"] == pytest.approx(2 / 3, abs=1e-4)
    reference = cohen_kappa_score([R, R, R], [R, N, R], labels=[N, R])  # the panel accepts all: kappa 0
    assert scored["cohen_kappa"] == pytest.approx(reference, abs=1e-4)


@pytest.mark.parametrize(
    "used",
    [
        ({"relevant"}, {"relevant"}),
        ({"relevant"}, {"relevant", "not_relevant"}),
        ({"not_relevant"}, {"relevant", "not_relevant"}),
        ({"relevant", "not_relevant"}, {"relevant", "not_relevant"}),
        ({"relevant"}, {"not_relevant"}),
    ],
    ids=["one value each, the same", "one and two", "the other one and two", "two and two", "one each, opposite"],
)
def test_dawid_skene_with_annotators_who_used_one_value_or_both(used):
    """Issue 63: crowd-kit leaves out the error-table rows of a value an annotator never used; the accuracy reads
    them as probability 0 instead of failing (the team report said "computing" for good)."""
    mine, theirs = used
    votes = {}
    for item in range(12):
        votes[(1, item)] = {
            "ann": sorted(mine)[item % len(mine)],
            "bob": sorted(theirs)[(item // 2) % len(theirs)],
        }
    accuracy = agreement.dawid_skene(votes)
    assert set(accuracy) == {"ann", "bob"}
    assert all(value is not None and 0.0 <= value <= 1.0 for value in accuracy.values()), accuracy
    if mine == theirs == {"relevant"}:
        assert accuracy == {"ann": 1.0, "bob": 1.0}  # both always say what the estimated truth is


def test_an_undefined_kappa_is_none_and_warns_nothing():
    """Issue 64: `export_inquire` and `release create` printed scikit-learn's UndefinedMetricWarning lines where
    kappa is undefined (both annotators always said the same one value)."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # any warning fails the test
        assert agreement.kappa_score(["relevant"] * 5, ["relevant"] * 5) is None
        assert agreement.kappa_score(["relevant", "not_relevant"], ["relevant", "not_relevant"]) == 1.0
