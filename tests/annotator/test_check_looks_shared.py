"""A check's looks shared among the people giving them: annotators who look at the same check at once are handed
different stretches of its sample (annotator.completeness.sampled), so a page loaded by two at the same time is not
judged twice, and nobody's place in the sample depends on what anyone voted."""

from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotator.completeness import sampled
from annotator.labels import LabelChange, set_labels
from annotator.models import Assignment, CompletenessCheck, Judgment, Label
from search.facade import search
from tests.annotator.claims_api import api_for, check_candidates, label

pytestmark = pytest.mark.django_db
PAGE = 10


@pytest.fixture
def check(labeling):
    """Query 1 reviewed by Ann down its top 20 (7 relevant, confirmed by the boss), then a check drawn over the
    whole collection at 75%: a sample of the 113 other images that Bob, Cy and Di, who judged none, look at."""
    query, ann, boss = labeling["query"], labeling["annotator"], labeling["admin"]
    top = [hit.image_id for hit in search(text=query.text, k=20)]
    changes = [LabelChange(image_id, "relevant" if n % 3 == 0 else "not_relevant") for n, image_id in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    label(
        boss,
        query,
        sorted(Label.objects.filter(query=query, value="relevant").values_list("image_id", flat=True)),
        "relevant",
    )
    body = {"target_recall": 0.75, "confidence": 0.9, "frame": {"kind": "collection"}}
    drawn = api_for(boss).post(f"/api/queries/{query.pk}/completeness/", body, format="json")
    assert drawn.status_code == 201, drawn.content
    made = CompletenessCheck.objects.get(status="checking")
    sample = list(made.images.order_by("position").values_list("image_id", flat=True))
    people = [User.objects.create_user(name, password=f"pw-{name}-1") for name in ("bob", "cy", "di")]
    assert len(sample) >= 6 * PAGE, "a sample a team shares"
    return {"query": query, "sample": sample, "people": people}


def judged_by(user, query):
    return set(Judgment.objects.filter(query=query, annotator=user).values_list("image_id", flat=True))


def test_one_looking_alone_reads_the_sample_from_its_start(check):
    bob = check["people"][0]
    assert check_candidates(bob, check["query"]) == check["sample"]


def test_people_who_look_at_once_are_handed_different_stretches_and_between_them_every_pair(check):
    query, sample = check["query"], check["sample"]
    bob, cy, di = check["people"]
    half = len(sample) // 2
    label(bob, query, check_candidates(bob, query, PAGE), "not_relevant")  # Bob starts: sample[:PAGE]
    # Cy joins while Bob works: halfway along the stretch ahead of Bob, where Bob's next pages are not.
    cy_page = check_candidates(cy, query, PAGE)
    assert cy_page == sample[PAGE + half :][:PAGE]
    label(cy, query, cy_page, "not_relevant")
    # Each goes on where they left off.
    assert check_candidates(bob, query, PAGE) == sample[PAGE : 2 * PAGE]
    assert check_candidates(cy, query, PAGE) == sample[2 * PAGE + half :][:PAGE]
    # Di joins: halfway along the longer of the two stretches, the one ahead of Bob (PAGE + half pairs long).
    di_page = check_candidates(di, query, PAGE)
    assert di_page == sample[PAGE + (PAGE + half) // 2 :][:PAGE]
    pages = [check_candidates(bob, query, PAGE), check_candidates(cy, query, PAGE), di_page]
    seen = [image_id for page in pages for image_id in page]
    assert len(seen) == len(set(seen)) == 3 * PAGE  # three pages loaded at once: no pair on two of them
    # Nothing is held back: each is still offered every pair that wants a look from them, only in another order.
    looked = set(sample[:PAGE]) | set(cy_page)
    for person in (bob, cy, di):
        assert set(check_candidates(person, query)) == set(sample) - looked


def test_a_team_assigned_to_the_query_opens_a_fresh_check_each_at_their_own_share(check):
    """Before anyone has looked, the query's assignees (by user id) start at their share of the sample: three who
    open the check together are shown three different pages at once."""
    query, sample, people = check["query"], check["sample"], check["people"]
    for person in people:
        Assignment.objects.create(query=query, annotator=person)
    pages = [check_candidates(person, query, PAGE) for person in people]
    assert pages == [sample[k * len(sample) // 3 :][:PAGE] for k in range(3)]
    boss = User.objects.get(username="boss")  # not assigned: the start, as before anyone was
    assert check_candidates(boss, query, PAGE) == [i for i in sample if i not in judged_by(boss, query)][:PAGE]


def test_looks_older_than_working_now_place_nobody(check, monkeypatch):
    """One who comes back after the others stopped (WORKING_NOW later) reads the sample from its start."""
    query, bob, cy = check["query"], *check["people"][:2]
    label(bob, query, check_candidates(bob, query, PAGE), "not_relevant")
    assert check_candidates(cy, query, PAGE) != check["sample"][PAGE : 2 * PAGE]  # Bob is working now
    later = timezone.now() + sampled.WORKING_NOW + timedelta(seconds=1)
    monkeypatch.setattr(timezone, "now", lambda: later)  # for a read (the GET writes nothing), WORKING_NOW on
    assert check_candidates(cy, query, PAGE) == check["sample"][PAGE : 2 * PAGE]


def test_nobodys_place_depends_on_what_anyone_voted(check):
    """Blind: Cy's order is read off who has looked, never off what they said."""
    query, bob, cy = check["query"], *check["people"][:2]
    first = check_candidates(bob, query, PAGE)
    label(bob, query, first, "not_relevant")
    before = check_candidates(cy, query)
    label(bob, query, first[:1], "relevant")  # Bob changes a vote: the pair now waits for the adjudicator
    assert check_candidates(cy, query) == before
