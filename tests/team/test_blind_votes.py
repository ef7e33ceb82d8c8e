"""Issue 63: a blind vote is final as a blind vote.

- The second judge of a sealed image learns nothing from their own saves: the answers to their saves (the API,
  the page's save of one label and of a range, Submit) and every list they read after are the same byte for byte
  whether the first judge voted relevant, not relevant, a mix, or not at all.
- A judge who changes their blind vote once both looks are in does not make an agreement: the image goes to the
  adjudicator as "revised", and agreement is computed from the blind votes.
- Staff open a sample: its judged images show their votes; those still waiting stay sealed.
"""

import random

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from django.db import transaction
from django.test import Client

from annotator.labels import LabelChange, adjudicate, sealed, set_labels
from annotator.labels.sealed import seen_by
from annotator.labels.selectors import disagreements
from annotator.models import BlindVote, Decision, Label, OverlapImage, Query
from annotator.team import agreement
from search.facade import search
from tests.team.test_blind_everywhere import MASKS, WORLDS, difference

pytestmark = pytest.mark.django_db


@pytest.fixture
def pair(labeling):
    """Query 1's overlap sample of 20 images, two judgments each: Ann judges first (in each world), Bob second. Bob
    is an annotator with the label permissions, not staff."""
    query, ann = labeling["query"], labeling["annotator"]
    top = [hit.image_id for hit in search(text=query.text, k=60)]
    Query.objects.filter(pk=query.pk).update(judgments_wanted=2)
    OverlapImage.objects.bulk_create([OverlapImage(query=query, image_id=image_id) for image_id in top[:20]])
    set_labels(
        query_id=query.pk, changes=[LabelChange(i, "relevant") for i in top[20:30]], user=ann, source="keyboard"
    )  # outside the sample: seen by all
    bob = User.objects.create_user("bob", password="pw-bob-1")
    bob.user_permissions.add(*Permission.objects.filter(codename__in=["view_label", "add_label", "change_label"]))
    client = Client()
    client.force_login(bob)
    return {"query": query, "ann": ann, "bob": bob, "sample": top[:20], "seen": top[20:30], "client": client}


def ann_votes(world: str, query: Query, ann: User, images: list[int]) -> None:
    if world == "nobody judged":
        return
    rng = random.Random(3)
    values = [world] * len(images) if world != "mixed" else [rng.choice(["relevant", "not_relevant"]) for _ in images]
    changes = [LabelChange(i, v) for i, v in zip(images, values, strict=True)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="click")


def masked(response) -> tuple[int, bytes]:
    content = b"".join(response.streaming_content) if response.streaming else response.content
    for pattern, mask in MASKS:
        content = pattern.sub(mask, content)
    return response.status_code, content


def test_the_second_judges_saves_and_reads_say_the_same_whatever_the_first_voted(pair):
    query, sample, client = pair["query"], pair["sample"], pair["client"]
    q = query.pk
    steps = [
        ("POST", "/api/labels/", {"query": q, "image": sample[0], "value": "not_relevant"}),
        ("POST", "/api/labels/", {"query": q, "image": sample[1], "value": "relevant"}),
        ("POST", f"/api/queries/{q}/labels/", {"labels": [{"image": sample[2], "value": "unsure"}]}),
        ("POST", f"/queries/{q}/labels", {"image": sample[3], "value": "not_relevant", "source": "keyboard"}),
        ("POST", f"/queries/{q}/labels", {"labels": [{"image": i, "value": "relevant"} for i in sample[4:8]]}),
        ("POST", f"/queries/{q}/submit", {"images": sample[8:12] + pair["seen"][:2]}),
        # He changes his mind on one: still only his own judgment in the answer.
        ("POST", "/api/labels/", {"query": q, "image": sample[0], "value": "relevant"}),
        ("GET", f"/api/labels/?query={q}", None),
        ("GET", f"/api/labels/?query={q}&value=relevant", None),
        ("GET", f"/api/labels/?image={sample[1]}", None),
        ("GET", f"/api/queries/{q}/candidates/?k=60", None),
        ("GET", f"/queries/{q}/", None),
        ("GET", f"/queries/{q}/figures", None),
        ("GET", "/", None),
    ]
    walked: dict[str, dict] = {}
    for world in WORLDS:
        with transaction.atomic():
            ann_votes(world, query, pair["ann"], sample)
            answers = {}
            for n, (method, path, body) in enumerate(steps):
                cache.clear()
                if method == "GET":
                    response = client.get(path, HTTP_ACCEPT="text/html,application/json")
                else:
                    response = client.post(path, body, content_type="application/json")
                answers[n, method, path] = masked(response)
            walked[world] = answers
            transaction.set_rollback(True)
    first, *others = WORLDS
    for world in others:
        for key, answer in walked[first].items():
            assert answer == walked[world][key], f"{key} answers differently when Ann voted {world!r}:\n" + difference(
                answer, walked[world][key]
            )
    saved = walked[first]
    assert all(status in (200, 201) for status, _ in saved.values()), {k: s for k, (s, _) in saved.items()}
    assert b'"decided_by":"sealed"' in saved[0, "POST", "/api/labels/"][1].replace(b" ", b"")


def test_a_vote_changed_after_both_looks_goes_to_the_adjudicator_and_agreement_counts_the_blind_votes(pair):
    query, sample, ann, bob = pair["query"], pair["sample"], pair["ann"], pair["bob"]
    image = sample[0]
    set_labels(query_id=query.pk, changes=[LabelChange(image, "relevant")], user=ann, source="click")
    set_labels(query_id=query.pk, changes=[LabelChange(image, "not_relevant")], user=bob, source="click")
    assert Label.objects.get(query=query, image_id=image).decided_by == Decision.UNDECIDED
    # Bob switches to agree: the judgments now agree, but his blind vote did not, so it is no agreement.
    set_labels(query_id=query.pk, changes=[LabelChange(image, "relevant")], user=bob, source="click")
    label = Label.objects.get(query=query, image_id=image)
    assert (label.value, label.decided_by) == ("undecided", Decision.UNDECIDED)
    waiting = {item["image"]: item for item in disagreements(query, pending_only=True)}
    assert waiting[image]["reason"] == "revised"
    assert {j["value"] for j in waiting[image]["judgments"]} == {"relevant"}
    assert waiting[image]["blind_votes"] == [
        {"annotator": "ann", "value": "relevant"},
        {"annotator": "bob", "value": "not_relevant"},
    ]
    judge = Client()
    judge.force_login(User.objects.get(username="boss"))
    page = judge.get(f"/queries/{query.pk}/adjudicate").content.decode()
    assert f'id="revised-{image}">A judge changed their blind vote' in page
    assert 'bob <span class="value not_relevant">not relevant</span>' in page
    listed = judge.get(f"/api/queries/{query.pk}/disagreements/").json()["results"]
    assert [row["blind_votes"] for row in listed if row["image"] == image] == [waiting[image]["blind_votes"]]
    assert dict(BlindVote.objects.filter(query=query, image_id=image).values_list("annotator__username", "value")) == {
        "ann": "relevant",
        "bob": "not_relevant",
    }
    # Agreement reads the blind votes: one item, the two disagreeing.
    figures = agreement.report([query.pk], resamples=10)
    assert figures["queries"][str(query.pk)]["items"] == 1
    assert figures["queries"][str(query.pk)]["percent_agreement"] == 0.0
    # Withdrawing the vote is a revision too, and the adjudicator's decision ends it.
    set_labels(query_id=query.pk, changes=[LabelChange(image, "")], user=bob, source="click")
    assert Label.objects.get(query=query, image_id=image).decided_by == Decision.UNDECIDED
    admin = User.objects.get(username="boss")
    adjudicate(query_id=query.pk, image_id=image, value="relevant", user=admin)
    assert Label.objects.get(query=query, image_id=image).decided_by == Decision.ADJUDICATED
    assert seen_by(query, User.objects.create_user("cy"))[image] == "relevant"  # decided: open to everyone


def test_a_judgment_given_before_the_draw_is_its_judges_blind_vote(pair):
    """An image judged before it is sealed (a sample drawn from the judged images, a check's re-look): that judgment
    is the vote; changing it once the second look is in sends the image to the adjudicator."""
    query, ann, bob = pair["query"], pair["ann"], pair["bob"]
    image = pair["seen"][0]  # Ann's relevant, before any seal
    sealed.seal(query.pk, [image])
    assert BlindVote.objects.get(query=query, image_id=image).value == "relevant"
    set_labels(query_id=query.pk, changes=[LabelChange(image, "relevant")], user=bob, source="click")
    assert Label.objects.get(query=query, image_id=image).decided_by == Decision.AGREED
    set_labels(query_id=query.pk, changes=[LabelChange(image, "not_relevant")], user=ann, source="click")
    assert Label.objects.get(query=query, image_id=image).decided_by == Decision.UNDECIDED


def test_staff_open_a_sample_where_its_images_have_their_judgments(pair):
    query, sample, ann, bob = pair["query"], pair["sample"], pair["ann"], pair["bob"]
    cy = User.objects.create_user("cy")
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in sample[:5]], user=ann, source="click")
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in sample[:3]], user=bob, source="click")
    assert not set(sample) & set(seen_by(query, cy))  # sealed to everyone else, both looks in or not
    assert seen_by(query, bob)[sample[0]] == "relevant" and sample[3] not in seen_by(query, bob)
    refused = Client()
    refused.force_login(bob)
    answer = refused.post(f"/api/queries/{query.pk}/overlap/open/")
    assert answer.status_code == 403 and "permission to change queries" in answer.json()["detail"]
    assert OverlapImage.objects.filter(opened_at__isnull=False).count() == 0
    staff = Client()
    staff.force_login(User.objects.get(username="boss"))
    answer = staff.post(f"/api/queries/{query.pk}/overlap/open/")
    assert answer.json() == {"query": query.pk, "opened": 3, "still_sealed": 17}
    assert {i: seen_by(query, cy).get(i) for i in sample[:5]} == {
        **{i: "relevant" for i in sample[:3]},
        **{i: None for i in sample[3:5]},  # Ann's single votes still wait for Bob's
    }
    assert sample[3] not in seen_by(query, bob)  # and Bob still judges them blind
