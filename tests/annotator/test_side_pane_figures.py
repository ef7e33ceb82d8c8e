"""The side pane agrees with itself (issue 64): mid-check and mid-benchmark-check, its figures add up, name their
units, and the advice, the next step and the progress line give the same counts, as the API's report does. Before,
right after a draw the box said "0 of 507 looked at twice, 30 waiting", "477 images left" and "507 looks left"
together, and a query a benchmark check sampled read "no check yet"."""

import re

import pytest
from django.contrib.auth.models import User

from annotator.completeness import check_requests, checks
from annotator.labels import LabelChange, set_labels
from annotator.models import CheckImage, CompletenessCheck
from search.facade import search

pytestmark = pytest.mark.django_db


def box(client, query) -> str:
    """The side pane's completeness box as text."""
    html = client.get(f"/queries/{query.pk}/").content.decode()
    found = re.search(r'<div id="completeness-box".*?</div>', html, re.S)
    assert found, "the label page shows the completeness box"
    return " ".join(re.sub(r"<[^>]+>", " ", found.group(0)).replace("&#x27;", "'").split())


def number(pattern: str, text: str) -> int:
    found = re.search(pattern, text)
    assert found, f"{pattern!r} not in: {text}"
    return int(found.group(1))


@pytest.fixture
def reviewed(labeling, client):
    """Ann judged the top 40 (every fourth relevant) and Bob confirmed her positives; staff read the pane."""
    query, ann = labeling["query"], labeling["annotator"]
    bob = User.objects.create_user("bob", password="pw-bob-1")
    top = [hit.image_id for hit in search(text=query.text, k=40)]
    changes = [LabelChange(i, "relevant" if n % 4 == 0 else "not_relevant") for n, i in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    set_labels(query_id=query.pk, changes=[c for c in changes if c.value == "relevant"], user=bob, source="keyboard")
    client.force_login(labeling["admin"])
    return {**labeling, "bob": bob, "top": top, "client": client}


def fresh(images, judged, n):
    """`n` of a sample's images nobody judged before the draw: a look at them is a fresh one."""
    return [image_id for image_id in images if image_id not in judged][:n]


def test_mid_check_the_figures_add_up_and_agree(reviewed):
    query, client, ann, bob = reviewed["query"], reviewed["client"], reviewed["annotator"], reviewed["bob"]
    asked = {"target_recall": 0.8, "confidence": 0.9, "frame": {"kind": "collection"}}
    checks.draw(query, check_requests.read_request(asked), None)
    sample = list(
        CompletenessCheck.objects.get(claim="query").images.order_by("position").values_list("image_id", flat=True)
    )
    looked = fresh(sample, set(reviewed["top"]), 23)
    set_labels(query_id=query.pk, changes=[LabelChange(i, "not_relevant") for i in looked[:20]], user=bob,
               source="keyboard")  # fmt: skip
    set_labels(
        query_id=query.pk, changes=[LabelChange(i, "relevant") for i in looked[20:]], user=ann, source="keyboard"
    )  # fmt: skip  (three positive looks: they wait for an adjudicator)

    said = box(client, query)
    size = number(r"Sample of (\d+) images:", said)
    labeled = number(r"images: (\d+) looked at once after the draw", said)
    waiting = number(r"\((\d+) of them wait for an adjudicator", said)
    left = number(r", (\d+) left ·", said)
    assert (size, labeled, waiting, left) == (len(sample), 23, 3, len(sample) - 23)
    assert labeled + left == size  # one look each: nobody waits for another look
    assert number(r"label the check's (\d+) images left", said) == left
    assert number(r"(\d+) images wait for an adjudicator\.", said) == waiting
    assert number(r"Label the check's (\d+) looks left: ", said) == left
    assert number(r"looks left: (\d+) images nobody has looked at since the draw", said) == left

    report = client.get(f"/api/queries/{query.pk}/completeness/").json()["sample"]
    assert report == {
        "size": size, "labeled": labeled, "positives": 0, "pending": waiting, "left": left,
        "waiting_for_look": 0, "waiting_for_adjudicator": waiting,
    }  # fmt: skip


def test_mid_benchmark_check_the_query_says_it_is_sampled_and_its_share_adds_up(reviewed):
    query, client, bob = reviewed["query"], reviewed["client"], reviewed["bob"]
    before = box(client, query)
    assert "no check yet" in before and "benchmark" not in before

    check, _ = checks.draw(
        None, check_requests.read_request({"target_recall": 0.8, "confidence": 0.9}, "benchmark"), None
    )
    pairs = list(
        CheckImage.objects.filter(completeness_check=check).order_by("position").values_list("image_id", flat=True)
    )
    said = box(client, query)
    assert f"Completeness: in benchmark check {check.ordinal}" in said and "no check yet" not in said
    assert f"No check of its own yet; the open benchmark check {check.ordinal} samples this query's frame" in said
    assert number(r"Label this query's (\d+) looks left in the benchmark check", said) == len(pairs)

    looked = fresh(pairs, set(reviewed["top"]), 12)
    set_labels(query_id=query.pk, changes=[LabelChange(i, "not_relevant") for i in looked[:10]], user=bob,
               source="keyboard")  # fmt: skip
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in looked[10:]], user=bob,
               source="keyboard")  # fmt: skip
    said = box(client, query)
    left = number(r"Label this query's (\d+) looks left in the benchmark check", said)
    assert left == len(pairs) - 12
    assert number(r"looks left in the benchmark check: (\d+) images nobody has looked at", said) == left

    panel = client.get("/dashboard/").content.decode()
    line = " ".join(re.sub(r"<[^>]+>", " ", re.search(r'<p id="benchmark-progress">.*?</p>', panel).group(0)).split())
    assert line == (
        f"Sample of {len(pairs)} pairs (a query and an image): 12 looked at (2 of them wait for an adjudicator), "
        f"{len(pairs) - 12} left."
    )
    report = client.get("/api/completeness/benchmark/").json()["sample"]
    assert (report["size"], report["labeled"], report["left"], report["waiting_for_adjudicator"]) == (
        len(pairs),
        12,
        len(pairs) - 12,
        2,
    )


def test_once_every_pair_has_its_look_the_advice_is_to_wait_not_to_label(reviewed):
    """Issue 64: after the annotators had judged every image of a benchmark check, the pane still said "Next:
    label". With every pair looked at and two positive looks waiting for an adjudicator, it says wait, and where."""
    query, client, bob = reviewed["query"], reviewed["client"], reviewed["bob"]
    check, _ = checks.draw(
        None, check_requests.read_request({"target_recall": 0.8, "confidence": 0.9}, "benchmark"), None
    )
    pairs = list(
        CheckImage.objects.filter(completeness_check=check).order_by("position").values_list("image_id", flat=True)
    )
    unjudged = fresh(pairs, set(reviewed["top"]), len(pairs))
    # Bob looks at every pair: two positive looks among those nobody had judged, and Ann's earlier judgments agreed
    # with (a look at an image judged before the draw is blind to the old vote).
    relevant = set(reviewed["top"][::4])
    looks = [LabelChange(i, "relevant" if i in unjudged[:2] or i in relevant else "not_relevant") for i in pairs]
    set_labels(query_id=query.pk, changes=looks, user=bob, source="keyboard")
    report = client.get("/api/completeness/benchmark/").json()
    assert report["sample"]["left"] == 0 and report["sample"]["waiting_for_adjudicator"] >= 2, report["sample"]
    said = box(client, query)
    assert "Next: wait" in said and "Next: label" not in said, said
    assert "Open the adjudication queue" in said
