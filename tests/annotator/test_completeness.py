"""Completeness checks end to end through the API: drawing over a frozen frame, labeling the sample (with blind
second judgments of its positives and adjudication), the claim, and every refusal leaving the data as it was."""

import numpy as np
import pytest
from django.contrib.auth.models import Permission, User
from rest_framework.test import APIClient

from annotator.labels import LabelChange, sealed, set_labels
from annotator.models import CompletenessCheck, Judgment, Label, OverlapImage
from annotator.progress import certify, checks
from annotator.progress.frames import pack, unpack
from search.facade import rank, search
from tests.factories import database_snapshot

pytestmark = pytest.mark.django_db


def api_for(user):
    api = APIClient()
    api.force_authenticate(user)
    return api


@pytest.fixture
def team(labeling):
    """Query 1 labeled down its text ranking by Ann (top 20: 6 relevant); Bob a second annotator; the admin staff."""
    query, ann = labeling["query"], labeling["annotator"]
    top = [hit.image_id for hit in search(text=query.text, k=20)]
    changes = [LabelChange(image_id, "relevant" if n % 3 == 0 else "not_relevant") for n, image_id in enumerate(top)]
    set_labels(query_id=query.pk, changes=changes, user=ann, source="keyboard")
    bob = User.objects.create_user("bob", password="pw-bob-1")
    return {**labeling, "bob": bob, "top": top, "url": f"/api/queries/{query.pk}/completeness/"}


def draw(team, body=None):
    body = body or {"target_recall": 0.5, "confidence": 0.9, "frame": {"kind": "top", "depth": 40}}
    return api_for(team["admin"]).post(team["url"], body, format="json")


def label(user, query, image_ids, value):
    answer = api_for(user).post(
        f"/api/queries/{query.pk}/labels/",
        {"labels": [{"image": image_id, "value": value} for image_id in image_ids]},
        format="json",
    )
    assert answer.status_code == 200, answer.content


def adjudicate(user, query, image_id, value):
    return api_for(user).post(
        f"/api/queries/{query.pk}/adjudicate/", {"image": image_id, "value": value}, format="json"
    )


def check_candidates(user, query, k=500):
    answer = api_for(user).get(f"/api/queries/{query.pk}/candidates/", {"strategy": "check", "k": k})
    assert answer.status_code == 200, answer.content
    return [row["image_id"] for row in answer.json()["results"]]


def test_no_check_yet_says_so_and_what_to_do(team):
    shown = api_for(team["annotator"]).get(team["url"]).json()
    assert shown["status"] == "no_check" and shown["recall_lower_bound"] is None and shown["frame"] is None
    assert "draw" in shown["next"]
    assert api_for(team["annotator"]).get(team["url"] + "frame/").status_code == 404


@pytest.mark.parametrize(
    ("body", "words"),
    [
        ({"target_recall": 0, "frame": {"kind": "top", "depth": 40}}, "target_recall"),
        ({"target_recall": 1, "frame": {"kind": "top", "depth": 40}}, "target_recall"),
        ({"target_recall": 1.5, "frame": {"kind": "top", "depth": 40}}, "target_recall"),
        ({"target_recall": "lots", "frame": {"kind": "top", "depth": 40}}, "target_recall"),
        ({"target_recall": True, "frame": {"kind": "top", "depth": 40}}, "target_recall"),
        ({"confidence": 0.0, "frame": {"kind": "top", "depth": 40}}, "confidence"),
        ({"frame": {"kind": "everything"}}, "kind"),
        ({"frame": {"kind": "top", "depth": 0}}, "depth"),
        ({"frame": {"kind": "top", "depth": 2**70}}, "depth"),
        ({"frame": {"kind": "top", "depth": "5000"}}, "depth"),
        ({"frame": {"kind": "top"}}, "depth"),
        ({"frame": "top"}, "frame"),
        ({"frame": {"kind": "taxa", "taxa": []}}, "taxa"),
        ({"frame": {"kind": "taxa", "taxa": ["No such bird"]}}, "No such bird"),
        ({"frame": {"kind": "taxa", "taxa": ["Aves\x00"]}}, "taxa"),
        ({"second_judgments": "perhaps?", "frame": {"kind": "collection"}}, ""),
        ([1, 2], "JSON object"),
    ],
)
def test_bad_input_is_refused_with_a_sentence_and_nothing_drawn(team, body, words):
    before = database_snapshot()
    answer = api_for(team["admin"]).post(team["url"], body, format="json")
    if body == {"second_judgments": "perhaps?", "frame": {"kind": "collection"}}:  # a word that is not "true": false
        assert answer.status_code == 201
        return
    assert answer.status_code == 400, answer.content
    assert words in answer.json()["detail"]
    assert database_snapshot() == before


def test_a_query_with_no_labels_cannot_be_checked(labeling):
    before = database_snapshot()
    answer = api_for(labeling["admin"]).post(
        f"/api/queries/{labeling['query'].pk}/completeness/", {"frame": {"kind": "collection"}}, format="json"
    )
    assert answer.status_code == 400 and "no labels yet" in answer.json()["detail"]
    assert database_snapshot() == before


def test_only_staff_draw_and_an_unknown_query_is_404(team):
    before = database_snapshot()
    answer = api_for(team["annotator"]).post(team["url"], {"frame": {"kind": "collection"}}, format="json")
    assert answer.status_code == 403 and "permission to change queries" in answer.json()["detail"]
    assert api_for(team["admin"]).post("/api/queries/999/completeness/", {}, format="json").status_code == 404
    assert database_snapshot() == before


def test_a_dry_run_says_the_cost_and_draws_nothing(team):
    before = database_snapshot()
    body = {"target_recall": 0.8, "confidence": 0.95, "frame": {"kind": "collection"}, "dry_run": True}
    cost = api_for(team["admin"]).post(team["url"], body, format="json").json()
    assert cost["frame_size"] == 120 and cost["judged"] == 20 and cost["unlabeled"] == 100 and cost["found"] == 7
    # Drawn from every image but the positives: a positive judged not relevant by mistake is still to be found.
    assert cost["sampled_from"] == 113
    assert cost["sample"] == certify.check_size(7, 113, 0.8, 0.975)  # the first check is tested at alpha / 2
    assert cost["second_judgments"] == 7  # Ann's positives, each with one judgment
    assert cost["rejudged"] == round(cost["sample"] * 13 / 113)  # about as many of Ann's negatives as they weigh
    assert database_snapshot() == before


def test_the_frame_is_frozen_at_the_draw(team):
    query = team["query"]
    relevant = list(Label.objects.filter(query=query, value="relevant").values_list("image_id", flat=True))
    not_relevant = list(Label.objects.filter(query=query, value="not_relevant").values_list("image_id", flat=True))
    text = {hit.image_id for hit in rank(strategy="text", text=query.text, k=40)}
    learned = {
        hit.image_id
        for hit in rank(
            strategy="feedback", text=query.text, relevant_ids=relevant, not_relevant_ids=not_relevant, k=40
        )
    }
    assert draw(team).status_code == 201
    frame = api_for(team["annotator"]).get(team["url"] + "frame/").json()
    assert set(frame["image_ids"]) == text | learned and frame["size"] == len(text | learned)
    # More labels move the learned ranking; the frame stays what it was.
    label(team["annotator"], query, sorted(set(range(1, 121)) - text - learned)[:10], "relevant")
    assert api_for(team["annotator"]).get(team["url"] + "frame/").json()["image_ids"] == frame["image_ids"]
    shown = api_for(team["annotator"]).get(team["url"]).json()
    assert shown["frame"] == {"kind": "top", "depth": 40, "size": len(text | learned)}


def positives_and_sample(query):
    """The query's relevant labels, its open check's sample, and the sampled images judged before the draw."""
    relevant = sorted(Label.objects.filter(query=query, value="relevant").values_list("image_id", flat=True))
    check = CompletenessCheck.objects.get(status="checking")
    sample = list(check.images.values_list("image_id", flat=True))
    judged = set(Judgment.objects.filter(query=query, image_id__in=sample).values_list("image_id", flat=True))
    return relevant, check, sample, [image_id for image_id in sample if image_id in judged]


def test_a_check_met_with_no_positive_certifies_once_the_positives_are_confirmed(team):
    query, ann, bob = team["query"], team["annotator"], team["bob"]
    drawn = draw(team, {"target_recall": 0.5, "confidence": 0.9, "frame": {"kind": "collection"}}).json()
    assert drawn["status"] == "checking" and drawn["sample"]["labeled"] == 0
    relevant, check, sample, prejudged = positives_and_sample(query)
    assert len(sample) == drawn["sample"]["size"] > 0 and not set(sample) & set(relevant)
    assert set(prejudged) <= set(team["top"])  # Ann's negatives may be drawn: each gets Bob's second look
    fresh = [image_id for image_id in sample if image_id not in prejudged]
    assert check_candidates(ann, query) == fresh  # Ann judged the rest: hers are the sample's new images
    label(ann, query, fresh, "not_relevant")
    shown = api_for(ann).get(team["url"]).json()
    assert shown["status"] == "checking" and shown["sample"]["labeled"] == len(fresh)
    assert shown["sample"]["pending"] == 7 + len(prejudged) and "second annotator" in shown["next"]
    confirm = check_candidates(bob, query)
    assert sorted(confirm) == sorted(relevant + prejudged)
    assert not sealed.seen_by(query, bob, confirm)  # blind: Bob sees them unlabeled
    label(bob, query, relevant, "relevant")
    label(bob, query, prejudged, "not_relevant")
    shown = api_for(ann).get(team["url"]).json()
    assert shown["status"] == "certified" and shown["recall_lower_bound"] >= 0.5
    claim = certify.claim(7, check.sampled_from, len(sample), 0, 0.5, check.tested_at)
    assert shown["recall_lower_bound"] == pytest.approx(claim.recall_lower_bound)
    assert shown["estimated_positives"]["low"] == 7 and shown["estimated_positives"]["high"] >= 7
    assert "Done" in shown["next"]


def test_a_sampled_positive_gets_a_blind_second_judgment_and_a_disagreement_waits_for_adjudication(team):
    query, ann, bob, admin = team["query"], team["annotator"], team["bob"], team["admin"]
    alone = {"target_recall": 0.5, "confidence": 0.9, "frame": {"kind": "top", "depth": 40}, "second_judgments": False}
    draw(team, alone)
    check = CompletenessCheck.objects.get()
    assert not OverlapImage.objects.exists()  # without second judgments nothing joins the overlap sample
    check.delete()
    draw(team)
    relevant, check, sample, prejudged = positives_and_sample(query)
    fresh = [image_id for image_id in sample if image_id not in prejudged]
    first, rest = fresh[0], fresh[1:]
    label(ann, query, [first], "relevant")
    assert OverlapImage.objects.filter(query=query, image_id=first).exists()  # in the same transaction
    assert first not in sealed.seen_by(query, bob, [first])  # Bob sees it unlabeled
    assert first in check_candidates(bob, query)
    assert first not in check_candidates(ann, query)
    label(ann, query, rest, "not_relevant")
    assert api_for(ann).get(team["url"]).json()["status"] == "checking"
    label(bob, query, [first], "not_relevant")  # Bob disagrees: the final label waits for an adjudicator
    label(bob, query, relevant, "relevant")
    label(bob, query, prejudged, "not_relevant")
    shown = api_for(ann).get(team["url"]).json()
    assert shown["status"] == "checking" and shown["sample"]["pending"] == 1 and "adjudicator" in shown["next"]
    decided = adjudicate(admin, query, first, "relevant")
    assert decided.status_code == 200, decided.content
    shown = api_for(ann).get(team["url"]).json()
    assert shown["status"] in ("certified", "not_certified") and shown["sample"]["positives"] == 1
    claim = certify.claim(7, check.sampled_from, len(sample), 1, 0.5, check.tested_at)
    assert shown["status"] == ("certified" if claim.certified else "not_certified")


def test_a_mistaken_positive_overturned_by_the_second_judgment_does_not_count(team):
    query, ann, bob = team["query"], team["annotator"], team["bob"]
    draw(team)
    positives, check, sample, prejudged = positives_and_sample(query)
    label(ann, query, sample, "not_relevant")
    label(bob, query, positives[:1], "not_relevant")  # one of Ann's positives was a mistake
    label(bob, query, positives[1:], "relevant")
    label(bob, query, prejudged, "not_relevant")
    admin = team["admin"]
    assert adjudicate(admin, query, positives[0], "not_relevant").status_code == 200
    shown = api_for(ann).get(team["url"]).json()
    assert shown["status"] != "checking" and shown["found"] == 6


def test_drawing_again_answers_the_open_check_and_later_checks_spend_less_error(team):
    query, ann = team["query"], team["annotator"]
    assert draw(team).status_code == 201
    again = draw(team, {"target_recall": 0.99, "confidence": 0.99, "frame": {"kind": "collection"}})
    assert again.status_code == 200 and again.json()["target_recall"] == 0.5  # the open one, unchanged
    first = CompletenessCheck.objects.get()
    label(ann, query, list(first.images.values_list("image_id", flat=True)), "relevant")  # a check full of positives
    label(team["bob"], query, check_candidates(team["bob"], query), "relevant")
    assert api_for(ann).get(team["url"]).json()["status"] == "not_certified"
    assert draw(team).status_code == 201
    second = CompletenessCheck.objects.get(ordinal=2)
    assert first.tested_at == pytest.approx(0.95) and second.tested_at == pytest.approx(0.975)
    assert checks.tested_at(0.9, 3) == pytest.approx(1 - 0.1 / 8)


def test_an_annotator_judging_blind_reads_no_claim_figures(team):
    query, ann, bob = team["query"], team["annotator"], team["bob"]
    draw(team)
    sample = list(CompletenessCheck.objects.get().images.values_list("image_id", flat=True))
    label(ann, query, sample[:1], "relevant")
    shown = api_for(bob).get(team["url"]).json()
    assert shown["withheld"] and shown["sample"]["positives"] is None and shown["found"] is None
    # Ann too waits for the second judgments of her positives (a count would tell her Bob's votes); adjudicators
    # read everything.
    assert api_for(ann).get(team["url"]).json()["sample"]["positives"] is None
    assert api_for(team["admin"]).get(team["url"]).json()["sample"]["positives"] == 1


def test_frame_ids_pack_small_and_come_back_whole():
    rng = np.random.default_rng(1)
    scattered = np.unique(rng.integers(0, 10**9, size=20_000))
    assert np.array_equal(unpack(pack(scattered)), scattered)
    contiguous = np.arange(1, 5_000_001, dtype=np.int64)
    assert len(pack(contiguous)) < 100_000 and np.array_equal(unpack(pack(contiguous)), contiguous)
    assert len(unpack(pack(np.array([], dtype=np.int64)))) == 0


def test_the_command_prints_each_claim_draws_one_and_refuses_with_a_reason(team, capsys, tmp_path):
    import json

    from django.core.management import call_command
    from django.core.management.base import CommandError

    query = team["query"]
    call_command("completeness", "--json")
    (record,) = json.loads(capsys.readouterr().out)
    assert record["query_id"] == query.pk and record["status"] == "no_check"
    before = database_snapshot()
    for arguments, words in [
        (["--query", "424242"], "unknown query"),
        (["--draw"], "exactly one --query"),
        (["--draw", "--query", str(query.pk), "--target", "1.5"], "target_recall"),
        (["--draw", "--query", str(query.pk), "--frame", "taxa", "--taxon", "No such bird"], "No such bird"),
    ]:
        with pytest.raises(CommandError, match=words):
            call_command("completeness", *arguments)
    assert database_snapshot() == before
    call_command("completeness", "--draw", "--query", str(query.pk), "--target", "0.5", "--depth", "40")
    captured = capsys.readouterr()
    check = CompletenessCheck.objects.get()
    assert f"Drew check 1 of query {query.pk}: {check.images.count()} images" in captured.err
    assert "checking" in captured.out and "top 40" in captured.out
    before = database_snapshot()
    # The open check is answered, not a second one drawn; nothing else changed.
    call_command("completeness", "--draw", "--query", str(query.pk))
    assert "already has an open check" in capsys.readouterr().err
    assert database_snapshot() == before

    call_command("export_inquire", str(tmp_path / "out"))
    exported = json.loads((tmp_path / "out" / "completeness.json").read_text())
    assert [row["query_id"] for row in exported] == [query.pk] and exported[0]["status"] == "checking"
    assert exported[0]["frame"]["size"] == check.frame_size and exported[0]["sample"]["size"] == check.images.count()
    team["admin"].refresh_from_db()
    client = APIClient()
    client.force_login(team["admin"])
    downloaded = client.get("/exports/completeness.json").json()
    assert downloaded == exported


def test_a_positive_the_review_judged_not_relevant_is_found_by_the_check(team):
    """The sample is drawn from every image of the frame but its positives: a mistaken "not relevant" of the review
    gets a second, blind look, and once adjudicated it counts against the claim (issue 39: leaving them out made
    10% of certified claims wrong on the simulator with a 5%-wrong annotator)."""
    query, ann, bob, admin = team["query"], team["annotator"], team["bob"], team["admin"]
    draw(team, {"target_recall": 0.95, "confidence": 0.9, "frame": {"kind": "collection"}})
    relevant, check, sample, prejudged = positives_and_sample(query)
    assert prejudged, "a check this size samples some of Ann's 13 negatives"
    missed = prejudged[0]  # Ann judged it not relevant; it is a positive
    assert missed in check_candidates(bob, query) and missed not in sealed.seen_by(query, bob, [missed])
    label(ann, query, [i for i in sample if i not in prejudged], "not_relevant")
    label(bob, query, relevant + [missed], "relevant")
    label(bob, query, prejudged[1:], "not_relevant")
    assert adjudicate(admin, query, missed, "relevant").status_code == 200
    shown = api_for(ann).get(team["url"]).json()
    assert shown["status"] == "not_certified" and shown["sample"]["positives"] == 1
    assert "found 1 positive" in shown["next"]
    assert Label.objects.get(query=query, image_id=missed).value == "relevant"  # it joined the labels


def test_the_admin_lists_checks_read_only_and_not_to_a_viewer_judging_blind(team, client):
    query, ann, bob = team["query"], team["annotator"], team["bob"]
    draw(team)
    check = CompletenessCheck.objects.get()
    client.force_login(team["admin"])
    listing = client.get("/admin/annotator/completenesscheck/").content.decode()
    assert f"/admin/annotator/completenesscheck/{check.pk}/change/" in listing
    assert (
        client.post(f"/admin/annotator/completenesscheck/{check.pk}/change/", {"status": "certified"}).status_code
        == 403
    )
    fresh = [
        i for i in check.images.values_list("image_id", flat=True) if not Judgment.objects.filter(image_id=i).exists()
    ]
    label(ann, query, fresh[:1], "relevant")  # sealed to Bob now
    bob.is_staff = True
    bob.save()
    bob.user_permissions.add(*Permission.objects.filter(codename="view_completenesscheck"))
    client.force_login(bob)
    assert f"/{check.pk}/change/" not in client.get("/admin/annotator/completenesscheck/").content.decode()
