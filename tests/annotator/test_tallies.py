"""The per-query counts the dashboard reads (annotator/labels/tallies.py) always equal what the labels say.

A team's day in random order: annotators label, change and clear their own judgments, Submit a page,
staff clear images for everyone and adjudicators decide disagreements, on a majority-rule query. After every
write the tally is compared with the counts computed from the label rows themselves, and each annotator's
count with their judgments. (The last activity is the tally's own: a clear is activity too, which the label
rows, being gone, cannot show.)
"""

import contextlib
import random

import pytest
from django.contrib.auth.models import Permission, User
from django.db.models import Count

from annotator.labels import (
    LabelChange,
    NoDisagreement,
    adjudicate,
    clear_labels,
    label_unlabeled,
    selectors,
    set_labels,
)
from annotator.models import Judgment, Label, Query, QueryAnnotator, QueryTally
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db

VALUES = ["relevant", "not_relevant", "unsure", ""]


@pytest.fixture
def team(write_json):
    import_inat(write_json(inat_document(images=12)))
    query = Query.objects.create(text="Black Skimmer performing skimming")
    other = Query.objects.create(text="a heron with a fish")
    annotators = [User.objects.create(username=name) for name in ("ann", "bob", "cy")]
    staff = User.objects.create(username="staff", is_staff=True, is_superuser=True)
    adjudicator = User.objects.create(username="judge")
    adjudicator.user_permissions.add(Permission.objects.get(codename="adjudicate_labels"))
    return query, other, annotators, staff, User.objects.get(pk=adjudicator.pk)


def from_the_labels(query):
    counts = Query.objects.filter(pk=query.pk).aggregate(**selectors.counted_from_labels())
    judgments = dict(
        Judgment.objects.filter(query=query, annotator__isnull=False)
        .order_by()
        .values_list("annotator__username")
        .annotate(n=Count("id"))
    )
    return counts, judgments


def tallied(query):
    counts = selectors.label_counts(query)
    judgments = dict(
        QueryAnnotator.objects.filter(query=query, judgments__gt=0).values_list("annotator__username", "judgments")
    )
    return counts, judgments


def test_the_tally_follows_every_kind_of_write(team):
    query, other, annotators, staff, adjudicator = team
    images = list(range(1000, 1012))
    rng = random.Random(7)
    for step in range(150):
        kind = rng.choice(["set"] * 6 + ["submit", "clear", "adjudicate"])
        if kind == "set":
            changes = [LabelChange(image, rng.choice(VALUES)) for image in rng.sample(images, rng.randint(1, 5))]
            set_labels(query_id=query.id, changes=changes, user=rng.choice(annotators), source="keyboard")
        elif kind == "submit":
            label_unlabeled(
                query.id, rng.sample(images, 4), value="not_relevant", user=rng.choice(annotators), source="submit"
            )
        elif kind == "clear":
            clear_labels(
                Label.objects.filter(query=query, image_id__in=rng.sample(images, 2)), user=staff, source="admin"
            )
        else:
            with contextlib.suppress(NoDisagreement):  # the image drawn had no disagreement to decide
                adjudicate(
                    query_id=query.id, image_id=rng.choice(images), value=rng.choice(VALUES[:3]), user=adjudicator
                )
        (counts, judgments), (expected, expected_judgments) = tallied(query), from_the_labels(query)
        last, latest_label = counts.pop("last_activity"), expected.pop("last_activity")
        assert (counts, judgments) == (expected, expected_judgments), f"step {step}: {kind}"
        # The last activity is the last change of a final label, a removal included: never before the
        # latest label's own time.
        assert latest_label is None or last >= latest_label, f"step {step}: {kind}"
    assert tallied(other) == from_the_labels(other) == ({"labeled": 0, "relevant": 0, "not_relevant": 0,
        "unsure": 0, "undecided": 0, "last_activity": None}, {})  # fmt: skip
    assert QueryTally.objects.get(query=query).labeled == Label.objects.filter(query=query).count() > 0


def test_the_dashboard_reads_the_tallies_not_the_labels(team, django_assert_max_num_queries):
    from annotator.progress import figures as progress

    query, other, annotators, _, _ = team
    for annotator in annotators:
        set_labels(query_id=query.id, changes=[LabelChange(1000, "relevant")], user=annotator, source="click")
    set_labels(query_id=other.id, changes=[LabelChange(1001, "unsure")], user=annotators[0], source="click")
    with django_assert_max_num_queries(12) as captured:
        rows, totals = progress.dashboard()
    assert not any('"annotator_label"' in entry["sql"] and "COUNT(" in entry["sql"].upper() for entry in captured)
    by_id = {row.pk: row for row in rows}
    assert (by_id[query.pk].labeled, by_id[query.pk].relevant, by_id[query.pk].annotators) == (
        1,
        1,
        ["ann", "bob", "cy"],
    )
    assert (by_id[other.pk].unsure, by_id[other.pk].annotators) == (1, ["ann"])
    assert totals["labeled"] == 2


def test_recount_rebuilds_the_tallies_from_the_labels(team):
    from annotator.labels.tallies import recount

    query, other, annotators, _, _ = team
    set_labels(
        query_id=query.id,
        changes=[LabelChange(1000, "relevant"), LabelChange(1001, "unsure")],
        user=annotators[0],
        source="click",
    )
    set_labels(query_id=query.id, changes=[LabelChange(1000, "not_relevant")], user=annotators[1], source="click")
    expected = tallied(query)
    QueryTally.objects.all().delete()  # labels written around annotator.labels leave no tally
    QueryAnnotator.objects.all().delete()
    assert tallied(query)[0]["labeled"] == 0
    assert recount() == 2  # both queries counted (the other one with zeros)
    assert tallied(query) == expected and tallied(other)[0]["labeled"] == 0


def test_the_recount_command_names_unknown_queries_and_counts_the_rest(team):
    from io import StringIO

    from django.core.management import CommandError, call_command

    query, _, annotators, _, _ = team
    set_labels(query_id=query.id, changes=[LabelChange(1000, "relevant")], user=annotators[0], source="click")
    QueryTally.objects.all().delete()
    with pytest.raises(
        CommandError, match=r"No query with id 999: the dashboard \(/dashboard/\) lists the queries. ids"
    ):
        call_command("recount_labels", "--query", "999")
    assert not QueryTally.objects.exists()  # nothing counted when an id is wrong
    out = StringIO()
    call_command("recount_labels", "--query", str(query.id), stdout=out)
    assert out.getvalue().strip() == "Counted the labels of 1 query."
    assert selectors.label_counts(query)["relevant"] == 1
