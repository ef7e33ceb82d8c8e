"""Every acknowledged judgment has its final label, equal to the query's rule over the judgments, under any
interleaving of clears, judgments, Submits, staff clears and adjudications.

Real threads, each on its own database connection; the writers of one image wait at that image's barrier
and are let go together. CI runs this module on PostgreSQL (where READ COMMITTED lost 85 of 200 final
labels to a clear racing a judgment, issue 37) and `./dev test` on SQLite.
"""

import random

import pytest
from django.contrib.auth.models import Permission, User
from django.core.management import call_command
from django.db import connection

from annotator import labels
from annotator.labels.selectors import counted_from_labels, label_counts
from annotator.models import FinalRule, Judgment, Label, LabelSource, Query
from catalog.importers import import_inat
from tests.factories import inat_document
from tests.threads import run_per_image

pytestmark = pytest.mark.django_db(transaction=True)

IMAGES = list(range(1000, 1048))  # the factory places at most 50
VALUES = ("relevant", "not_relevant", "unsure")


@pytest.fixture
def team(write_json):
    import_inat(write_json(inat_document(images=len(IMAGES))))
    query = Query.objects.create(id=8, text="Black Skimmer performing skimming")
    people = {name: User.objects.create_user(name, password="pw") for name in ("ann", "bob", "cy", "staff", "judge")}
    people["staff"].user_permissions.add(Permission.objects.get(codename="change_query"))
    people["judge"].user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    return query, {name: User.objects.get(pk=user.pk) for name, user in people.items()}  # permissions fresh


def missing_or_wrong_finals(query: Query) -> list[str]:
    return labels.finals_astray(query.pk)


def tallies_hold(query: Query) -> bool:
    counted = Query.objects.filter(pk=query.pk).annotate(**counted_from_labels()).values(*counted_from_labels()).get()
    kept = label_counts(query)
    return all(kept[name] == counted[name] for name in ("labeled", "relevant", "not_relevant", "unsure", "undecided"))


def test_a_clear_racing_a_judgment_keeps_the_judgments_final_label(team):
    """The issue's race: ann's label of each image is cleared by her while bob judges it, at the same moment."""
    query, people = team
    ann, bob = people["ann"], people["bob"]
    labels.set_labels(
        query_id=query.pk, changes=[labels.LabelChange(i, "relevant") for i in IMAGES], user=ann, source="keyboard"
    )

    def judge(user, image_id, value):
        change = [labels.LabelChange(image_id, value)]
        return lambda: labels.set_labels(query_id=query.pk, changes=change, user=user, source="keyboard")

    results = run_per_image([[judge(ann, i, ""), judge(bob, i, "not_relevant")] for i in IMAGES])
    assert not [r for r in results if isinstance(r, Exception)], results
    assert Judgment.objects.filter(query=query, annotator=bob).count() == len(IMAGES)
    assert missing_or_wrong_finals(query) == []
    assert Label.objects.filter(query=query, value="not_relevant").count() == len(IMAGES)
    assert tallies_hold(query)


@pytest.mark.parametrize("rule", [FinalRule.MAJORITY, FinalRule.UNANIMOUS])
def test_random_interleavings_leave_every_final_label_as_the_rule_says(team, rule):
    query, people = team
    Query.objects.filter(pk=query.pk).update(final_rule=rule)
    rng = random.Random(f"interleavings-{rule}")  # seeded: a failure replays

    def judge(name, image_id, value):
        change = [labels.LabelChange(image_id, value)]
        return lambda: labels.set_labels(query_id=query.pk, changes=change, user=people[name], source="click")

    def submit(name, image_ids):
        return lambda: labels.label_unlabeled(
            query.pk, image_ids, value="not_relevant", user=people[name], source=LabelSource.SUBMIT
        )

    def staff_clear(image_id):
        return lambda: labels.clear_labels(
            Label.objects.filter(query=query, image_id=image_id), user=people["staff"], source=LabelSource.ADMIN
        )

    def adjudicate(image_id, value):
        return lambda: labels.adjudicate(query_id=query.pk, image_id=image_id, value=value, user=people["judge"])

    def writer(image_id):
        kind = rng.choice(["judge", "judge", "judge", "clear", "submit", "staff clear", "adjudicate"])
        name = rng.choice(["ann", "bob", "cy"])
        if kind == "judge":
            return judge(name, image_id, rng.choice(VALUES))
        if kind == "clear":
            return judge(name, image_id, "")
        if kind == "submit":  # a Submit of a page: this image and a few of its neighbours
            return submit(name, [image_id, *rng.sample(IMAGES, 3)])
        if kind == "staff clear":
            return staff_clear(image_id)
        return adjudicate(image_id, rng.choice(VALUES))

    for round_ in range(8):
        chosen = rng.sample(IMAGES, 12)
        results = run_per_image([[writer(i) for _ in range(rng.choice([2, 3]))] for i in chosen])
        unexpected = [r for r in results if isinstance(r, Exception) and not isinstance(r, labels.NoDisagreement)]
        assert not unexpected, f"round {round_}: {unexpected}"
        assert missing_or_wrong_finals(query) == [], f"round {round_}"
        assert tallies_hold(query), f"round {round_}"
    assert Judgment.objects.filter(query=query).exists()  # the rounds did judge


def test_recount_finds_and_repairs_a_missing_final_label(team, capsys):
    """A final label lost (a database restored from an old dump, a row deleted by hand) is found and made
    again from the judgments by `recount_labels --finals`."""
    query, people = team
    changes = [labels.LabelChange(i, "relevant") for i in IMAGES[:5]]
    labels.set_labels(query_id=query.pk, changes=changes, user=people["ann"], source="keyboard")
    with connection.cursor() as cursor:  # behind the write path's back, as a restore or a hand edit would
        cursor.execute(f"DELETE FROM {Label._meta.db_table} WHERE image_id IN (%s, %s)", [IMAGES[0], IMAGES[3]])
        cursor.execute(
            f"INSERT INTO {Label._meta.db_table} (query_id, image_id, value, decided_by, created_at, updated_at) "
            "VALUES (%s, %s, 'relevant', 'single', '2026-01-01', '2026-01-01')",
            [query.pk, IMAGES[10]],  # and a final label nobody judged
        )
    assert len(missing_or_wrong_finals(query)) == 3
    call_command("recount_labels", "--finals", "--query", str(query.pk))
    out = capsys.readouterr().out
    assert "query 8: 3 final labels made again" in out
    assert missing_or_wrong_finals(query) == []
    assert tallies_hold(query)
    call_command("recount_labels", "--finals", "--query", str(query.pk))
    assert "query 8: every final label as its judgments say" in capsys.readouterr().out
