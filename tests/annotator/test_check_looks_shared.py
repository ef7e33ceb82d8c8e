"""A check's looks shared among the people giving them: annotators who look at the same check at once are handed
different stretches of its sample (annotator.completeness.sampled), so a page loaded by two at the same time is not
judged twice, and nobody's place in the sample depends on what anyone voted."""

from collections import Counter
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.utils import timezone

from annotator.completeness import certify, sampled
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
    whole = list(made.images.order_by("position").values_list("image_id", flat=True))
    # The check is drawn in two stages: its first stage's pairs are handed out first (they certify if they count
    # none), and they are what a team shares until each has its look.
    assert 0 < made.first_stage < len(whole)
    sample = whole[: made.first_stage]
    people = [User.objects.create_user(name, password=f"pw-{name}-1") for name in ("bob", "cy", "di")]
    assert len(sample) >= 6 * PAGE, "a sample a team shares"
    return {"query": query, "sample": sample, "whole": whole, "people": people, "boss": boss}


def judged_by(user, query):
    return set(Judgment.objects.filter(query=query, annotator=user).values_list("image_id", flat=True))


def test_one_looking_alone_reads_the_sample_from_its_start(check):
    bob = check["people"][0]
    assert check_candidates(bob, check["query"]) == check["sample"]


def test_one_nobody_can_place_is_handed_their_share_from_a_place_of_their_own_the_same_on_every_load(check):
    """Nobody looking and nobody assigned: asked for their share (the labeling page's), each is handed the sample from
    a place of their own (`sampled.own_place`, from the check's and their ids), so people who open a fresh check at
    once are not all handed its start; asked for every image (the API's default), the sample from its start."""
    query, sample, people = check["query"], check["sample"], check["people"]
    made = CompletenessCheck.objects.get(status="checking")
    for person in people:
        start = sampled.own_place(made, query, person.pk, len(sample))
        assert 0 <= start < len(sample)
        mine = check_candidates(person, query, share=True)
        assert mine == sample[start:] + sample[:start] == check_candidates(person, query, share=True)
        assert check_candidates(person, query) == sample
    places = {sampled.own_place(made, query, person_id, len(sample)) for person_id in range(1, 3001)}
    assert len(places) == len(sample)  # every place is someone's: three thousand ids land all over the sample


def test_people_who_look_at_once_are_handed_different_stretches_and_between_them_every_pair(check):
    query, sample = check["query"], check["sample"]
    bob, cy, di = check["people"]
    label(bob, query, check_candidates(bob, query, PAGE), "not_relevant")  # Bob starts: sample[:PAGE]
    # Cy joins while Bob works: halfway along the pairs ahead of Bob (those still wanting a look), where Bob's next
    # pages are not.
    half = (len(sample) - PAGE) // 2
    cy_page = check_candidates(cy, query, PAGE)
    assert cy_page == sample[PAGE + half :][:PAGE]
    label(cy, query, cy_page, "not_relevant")
    # Each goes on where they left off.
    assert check_candidates(bob, query, PAGE) == sample[PAGE : 2 * PAGE]
    assert check_candidates(cy, query, PAGE) == sample[2 * PAGE + half :][:PAGE]
    # Di joins: halfway along the longer of the two stretches of pairs wanting a look, the one ahead of Bob.
    di_page = check_candidates(di, query, PAGE)
    assert di_page == sample[PAGE + half // 2 :][:PAGE]
    pages = [check_candidates(bob, query, PAGE), check_candidates(cy, query, PAGE), di_page]
    seen = [image_id for page in pages for image_id in page]
    assert len(seen) == len(set(seen)) == 3 * PAGE  # three pages loaded at once: no pair on two of them
    # Nothing is held back: asked for every image, each is still handed every pair that wants a look from them, only
    # in another order.
    looked = set(sample[:PAGE]) | set(cy_page)
    for person in (bob, cy, di):
        assert set(check_candidates(person, query)) == set(sample) - looked
    # Asked for their share (the labeling page's), however many they ask for, each is handed their own stretch alone,
    # up to the next person's place: between them Bob and Cy, who have looked, are handed every pair that wants a
    # look, each pair to one of them (Di, who has not saved a look yet, is known to nobody: hers is half of Bob's).
    bob_all, cy_all, di_all = (check_candidates(person, query, share=True) for person in (bob, cy, di))
    assert not set(bob_all) & set(cy_all) and set(bob_all) | set(cy_all) == set(sample) - looked
    assert set(di_all) < set(bob_all) and len(di_all) == len(bob_all) - len(bob_all) // 2


def test_two_who_saved_the_same_page_at_once_are_handed_different_pages_next(check):
    """Bob and Cy open the check at the same moment (nobody is looking yet, neither is assigned: both are shown its
    start) and both save that page: their places coincide, so Bob (the lower user id) goes on and Cy goes halfway
    along the pairs ahead of him, instead of the two being shown the same page again and again."""
    query, sample = check["query"], check["sample"]
    bob, cy = check["people"][:2]
    first = [check_candidates(person, query, PAGE) for person in (bob, cy)]
    assert first == [sample[:PAGE], sample[:PAGE]]
    for person, page in zip((bob, cy), first, strict=True):
        label(person, query, page, "not_relevant")
    bob_next, cy_next = check_candidates(bob, query, PAGE), check_candidates(cy, query, PAGE)
    assert bob_next == sample[PAGE : 2 * PAGE]
    assert cy_next == sample[PAGE + (len(sample) - PAGE) // 2 :][:PAGE]


# Where Bob, Cy and Di start a fresh check: their own places (ids vary between runs on PostgreSQL); places a seeded
# draw gave that showed two pages meeting after the first round, before each person's start (not only their place)
# bounded the others' pages: one who went on from a place another had caught up with read on past where the other
# then started (30, 38, 13); first pages a few pairs apart (7, 11, 10); all at the start, as before (0, 0, 0).
STARTS = [None, (30, 38, 13), (7, 11, 10), (0, 0, 0)]


@pytest.mark.parametrize("fixed", STARTS)
def test_a_team_looking_at_once_judges_each_pair_once_while_a_page_each_is_left(check, monkeypatch, fixed):
    """Bob, Cy and Di load a page each at the same moment, then each saves theirs, round after round until the check
    wants nothing more of them. Nobody had looked and none is assigned, so the server knows none of them when they
    load their first pages: each starts at a place of their own (`sampled.own_place`), where before all three were
    shown the start, and those pages meet only by chance; from then on, in every round that starts with a page or
    more left for each, the three pages never meet, and in the last rounds they meet in a few pairs at most."""
    query, sample, people = check["query"], check["sample"], check["people"]
    made = CompletenessCheck.objects.get(status="checking")
    if fixed is not None:
        placed = dict(zip((person.pk for person in people), fixed, strict=True))
        monkeypatch.setattr(sampled, "own_place", lambda check, query, viewer_id, size: placed[viewer_id] % size)
    starts = [sampled.own_place(made, query, person.pk, len(sample)) for person in people]
    rounds = []
    while any(pages := [check_candidates(person, query, PAGE, share=True) for person in people]):
        looked = set(Judgment.objects.filter(query=query, annotator__in=people).values_list("image_id", flat=True))
        rounds.append((len(set(sample) - looked), pages))
        for person, page in zip(people, pages, strict=True):
            label(person, query, page, "not_relevant")
    assert rounds[0][1] == [(sample[start:] + sample[:start])[:PAGE] for start in starts]
    full = [pages for left, pages in rounds[1:] if left >= 3 * PAGE]
    assert len(full) >= 1, "a sample that takes the three some rounds"
    for pages in full:
        seen = [image_id for page in pages for image_id in page]
        assert len(seen) == len(set(seen)), f"two pages of a round met: {pages}"
    looks = Counter(Judgment.objects.filter(query=query, annotator__in=people).values_list("image_id", flat=True))
    assert set(looks) == set(sample)  # every pair looked at
    first = Counter(image_id for page in rounds[0][1] for image_id in page)
    twice = {image_id for image_id, n in looks.items() if n > 1} - {i for i, n in first.items() if n > 1}
    assert len(twice) < PAGE, twice


def test_one_who_catches_up_with_another_is_handed_the_pairs_up_to_them_then_goes_where_nobody_is(check):
    """Cy works three pairs ahead of Bob's place: Bob is handed those three alone, not the pairs Cy is about to be
    shown; once he has looked at them he has caught up with her, and goes halfway along the stretch ahead of her."""
    query, sample = check["query"], check["sample"]
    bob, cy = check["people"][:2]
    label(bob, query, sample[:PAGE], "not_relevant")
    label(cy, query, sample[PAGE + 3 : 2 * PAGE + 3], "not_relevant")
    cy_next = check_candidates(cy, query, PAGE, share=True)
    assert cy_next == sample[2 * PAGE + 3 :][:PAGE]
    assert check_candidates(bob, query, PAGE, share=True) == sample[PAGE : PAGE + 3]
    label(bob, query, sample[PAGE : PAGE + 3], "not_relevant")
    ahead_of_cy = sample[2 * PAGE + 3 :]
    assert check_candidates(bob, query, PAGE, share=True) == ahead_of_cy[len(ahead_of_cy) // 2 :][:PAGE]
    assert check_candidates(cy, query, PAGE, share=True) == cy_next  # Cy, working there, goes on as she was


def test_a_team_assigned_to_the_query_opens_a_fresh_check_each_at_their_own_share(check):
    """Before anyone has looked, the query's assignees (by user id) start at their share of the sample: three who
    open the check together are shown three different pages at once."""
    query, sample, people = check["query"], check["sample"], check["people"]
    for person in people:
        Assignment.objects.create(query=query, annotator=person)
    pages = [check_candidates(person, query, PAGE) for person in people]
    assert pages == [sample[k * len(sample) // 3 :][:PAGE] for k in range(3)]
    # Asked for their share (the labeling page's), each is handed their third alone, however many they ask for.
    thirds = [check_candidates(person, query, share=True) for person in people]
    assert thirds == [sample[k * len(sample) // 3 : (k + 1) * len(sample) // 3] for k in range(3)]
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


# --- A check in two stages: its first stage's pairs first; they certify if they count no positive --------------


def report(user, query):
    return api_for(user).get(f"/api/queries/{query.pk}/completeness/").json()


def test_a_first_stage_that_counts_no_positive_certifies_the_check_without_the_rest(check):
    """The first stage's pairs are handed out first, shared as any stretch is; once each has its look and none was
    called a positive, the write of the last look certifies the check (certify.staged_sizes) and the rest of the
    sample is never handed out. Its bound is read from the first stage's pairs, and the report says how it was
    decided."""
    query, first, whole, boss = check["query"], check["sample"], check["whole"], check["boss"]
    bob, cy = check["people"][:2]
    label(bob, query, first[: len(first) // 2], "not_relevant")
    handed = check_candidates(cy, query)
    assert set(handed) == set(first[len(first) // 2 :]), "Cy is handed the first stage's pairs left, not the rest"
    label(cy, query, handed[:-1], "not_relevant")
    assert CompletenessCheck.objects.get(query=query).status == "checking"
    label(cy, query, handed[-1:], "not_relevant")  # the first stage's last look: decided in this write
    made = CompletenessCheck.objects.get(query=query)
    assert made.status == "certified" and made.looked_at == made.first_stage == len(first) and made.positives == 0
    assert check_candidates(bob, query) == [] and check_candidates(check["people"][2], query) == []
    shown = report(boss, query)
    assert shown["first_stage"] == len(first) and shown["decided_early"] is None
    assert shown["decided_by_first_stage"].startswith(
        f"certified by the first {len(first):,} of its {len(whole):,} sampled pairs: they counted no positive"
    )
    plain = certify.claim(made.found, made.sampled_from, len(first), 0, 0.75, made.tested_at, made.miss_rate)
    assert plain.certified and shown["recall_lower_bound"] == pytest.approx(plain.recall_lower_bound)
    assert "Recall is at least 75% with 90% confidence" in shown["claim"]


def test_a_first_stage_that_meets_a_positive_hands_out_the_rest_and_the_whole_sample_decides(check):
    """A first-stage pair called relevant does not open the rest while another first-stage pair still wants a look
    (which pairs a judge is handed never depends on a vote); once every first-stage pair has its look, the rest is
    handed out, and the adjudicator's confirmation leaves the whole sample to decide, by the write of its last look."""
    query, first, whole, boss = check["query"], check["sample"], check["whole"], check["boss"]
    bob, cy = check["people"][:2]
    label(bob, query, first[:1], "relevant")
    label(bob, query, first[1:-1], "not_relevant")
    assert check_candidates(cy, query) == first[-1:]  # the first stage still wants a look: not the rest
    label(cy, query, first[-1:], "not_relevant")
    rest = whole[len(first) :]
    assert set(check_candidates(cy, query)) == set(rest)
    answer = api_for(boss).post(
        f"/api/queries/{query.pk}/adjudicate/", {"image": first[0], "value": "relevant"}, format="json"
    )
    assert answer.status_code == 200, answer.content
    assert CompletenessCheck.objects.get(query=query).status == "checking"  # its first stage counted one
    label(cy, query, rest, "not_relevant")
    made = CompletenessCheck.objects.get(query=query)
    assert made.status in ("certified", "not_certified") and made.looked_at == len(whole) and made.positives == 1
    shown = report(boss, query)
    assert shown["decided_by_first_stage"] is None and shown["sample"]["positives"] == 1


def test_one_who_may_not_look_at_the_first_stages_last_pairs_waits_rather_than_start_on_the_rest(check, labeling):
    """Ann judged some sampled images before the draw, so their fresh looks are the others' to give: once the rest of
    the first stage has its looks, Ann is handed nothing (not the rest of the sample, whose looks a clean first stage
    would not need) while Cy is handed Ann's images of the first stage."""
    query, first, whole = check["query"], check["sample"], check["whole"]
    ann, bob, cy = labeling["annotator"], *check["people"][:2]
    hers = judged_by(ann, query) & set(first)
    assert hers, "the first stage holds some of Ann's negatives"
    label(bob, query, [i for i in first if i not in hers], "not_relevant")
    assert check_candidates(ann, query) == []
    assert set(check_candidates(cy, query)) == hers
    assert not set(check_candidates(cy, query)) & set(whole[len(first) :])


def test_a_first_stage_whose_own_bound_falls_short_leaves_the_whole_sample_to_decide(check, monkeypatch):
    """A clean first stage certifies only where its own bound (certify.claim over its pairs, at the positives still
    confirmed) certifies too: were the positives found at the draw overturned since, it would not, and the whole
    sample decides instead (declining a first stage's certificate only lowers the staged test's level)."""
    from dataclasses import replace

    from annotator.completeness import checks

    query, first, whole = check["query"], check["sample"], check["whole"]
    bob = check["people"][0]
    label(bob, query, first[:-1], "not_relevant")
    real = checks.certify.claim
    monkeypatch.setattr(checks.certify, "claim", lambda *a, **k: replace(real(*a, **k), certified=False))
    label(bob, query, first[-1:], "not_relevant")  # the first stage clean, its bound short: nothing decided
    made = CompletenessCheck.objects.get(query=query)
    assert made.status == "checking" and made.looked_at is None
    assert set(check_candidates(bob, query)) == set(whole[len(first) :])
