import pytest
from django.contrib.auth.models import User

from annotator.labels import LabelChange, clear_label, set_label, set_labels, set_labels_in_bulk
from annotator.models import Judgment, Label, LabelEvent, Query
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def query(write_json):
    import_inat(write_json(inat_document(images=5)))
    return Query.objects.create(text="Black Skimmer performing skimming")


def history(query):
    return list(LabelEvent.objects.filter(query=query).values_list("image_id", "old_value", "new_value", "source"))


def test_each_annotator_keeps_their_own_judgment(query):
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")

    label, changed = set_label(query_id=query.id, image_id=1000, value="relevant", user=ann, source="keyboard")
    assert changed and label.annotator == ann and label.decided_by == "single"
    _, changed = set_label(query_id=query.id, image_id=1000, value="relevant", user=ann, source="keyboard")
    assert not changed
    label, _ = set_label(query_id=query.id, image_id=1000, value="not_relevant", user=bob, source="click")

    # Bob's judgment sits beside Ann's: one vote each, no majority, so the final label is undecided.
    assert dict(Judgment.objects.values_list("annotator__username", "value")) == {
        "ann": "relevant",
        "bob": "not_relevant",
    }
    assert (label.value, label.decided_by, label.annotator) == ("undecided", "undecided", None)
    assert history(query) == [(1000, "", "relevant", "keyboard"), (1000, "", "not_relevant", "click")]
    assert list(LabelEvent.objects.values_list("user__username", "annotator__username")) == [
        ("ann", "ann"),
        ("bob", "bob"),
    ]


def test_clearing_a_label_leaves_it_in_the_history(query):
    set_label(query_id=query.id, image_id=1001, value="not_relevant", source="click")

    assert clear_label(query_id=query.id, image_id=1001, source="keyboard")
    assert not clear_label(query_id=query.id, image_id=1001, source="keyboard")
    assert not Label.objects.exists()
    assert history(query) == [(1001, "", "not_relevant", "click"), (1001, "not_relevant", "", "keyboard")]


def test_bulk_labels_skip_pairs_that_already_have_the_value(query):
    set_label(query_id=query.id, image_id=1000, value="relevant", source="click")
    set_label(query_id=query.id, image_id=1001, value="unsure", source="click")

    changed = set_labels_in_bulk(
        [(query.id, i) for i in (1000, 1001, 1002, 1002)], value="not_relevant", source="submit", batch_size=2
    )

    assert changed == 3
    assert dict(Label.objects.values_list("image_id", "value")) == {
        1000: "not_relevant",
        1001: "not_relevant",
        1002: "not_relevant",
    }
    assert history(query)[2:] == [
        (1000, "relevant", "not_relevant", "submit"),
        (1001, "unsure", "not_relevant", "submit"),
        (1002, "", "not_relevant", "submit"),
    ]


def test_bulk_update_moves_updated_at(query):
    label, _ = set_label(query_id=query.id, image_id=1000, value="relevant", source="click")
    set_labels_in_bulk([(query.id, 1000)], value="unsure", source="submit")
    assert Label.objects.get(pk=label.pk).updated_at > label.updated_at


@pytest.mark.parametrize(
    "value, source, problem",
    [("maybe", "click", "'maybe' is not a label"), ("relevant", "magic", "'magic' is not a label source")],
)
def test_unknown_values_and_sources_are_refused(query, value, source, problem):
    with pytest.raises(ValueError, match=problem):
        set_label(query_id=query.id, image_id=1000, value=value, source=source)
    assert not Label.objects.exists() and not LabelEvent.objects.exists()


def test_history_is_append_only(query):
    set_label(query_id=query.id, image_id=1000, value="relevant", source="click")
    event = LabelEvent.objects.get()
    event.new_value = "not_relevant"
    with pytest.raises(TypeError, match="append-only"):
        event.save()
    with pytest.raises(TypeError, match="append-only"):
        event.delete()
    with pytest.raises(TypeError, match="append-only"):
        LabelEvent.objects.filter(pk=event.pk).update(new_value="unsure")
    with pytest.raises(TypeError, match="append-only"):
        LabelEvent.objects.all().delete()
    assert LabelEvent.objects.get().new_value == "relevant"


def test_a_batch_applies_in_order_and_records_every_change(query):
    ann = User.objects.create(username="ann")
    set_label(query_id=query.id, image_id=1003, value="unsure", user=ann, source="click")
    changes = [
        LabelChange(1000, "relevant", 900),
        LabelChange(1001, "not_relevant"),
        LabelChange(1000, "unsure", 400),  # the same image again: the later value wins, both recorded
        LabelChange(1003, "unsure"),  # already so: not a change
        LabelChange(1003, ""),  # cleared
        LabelChange(1004, ""),  # no label to clear
    ]
    saved = set_labels(query_id=query.id, changes=changes, user=ann, source="keyboard")
    assert [(s.image_id, s.value, s.changed) for s in saved] == [
        (1000, "relevant", True),
        (1001, "not_relevant", True),
        (1000, "unsure", True),
        (1003, "unsure", False),
        (1003, "", True),
        (1004, "", False),
    ]
    assert dict(Label.objects.filter(query=query).values_list("image_id", "value")) == {
        1000: "unsure",
        1001: "not_relevant",
    }
    assert history(query)[1:] == [
        (1000, "", "relevant", "keyboard"),
        (1000, "relevant", "unsure", "keyboard"),
        (1001, "", "not_relevant", "keyboard"),
        (1003, "unsure", "", "keyboard"),
    ]
    assert list(LabelEvent.objects.filter(image_id=1000).values_list("lead_time_ms", flat=True)) == [900, 400]


def test_a_batch_of_500_costs_a_handful_of_statements(query, django_assert_max_num_queries):
    # The page and the API used to call set_label once per item: a SELECT FOR UPDATE and more each.
    ann = User.objects.create(username="ann")
    set_labels(query_id=query.id, changes=[LabelChange(1000, "relevant")], user=ann, source="api")
    many = [LabelChange(1000 + n % 5, ("relevant", "unsure", "not_relevant")[n % 3]) for n in range(500)]
    # Savepoint, lock check, SELECT FOR UPDATE, INSERT, an UPDATE per new value (three here) of the
    # judgments and of the final labels, DELETE, and the events in bulk (SQLite's parameter limit may split
    # those 500 rows in a few INSERTs): a handful, whatever the batch's size.
    with django_assert_max_num_queries(20):
        saved = set_labels(query_id=query.id, changes=many, user=ann, source="api")
    assert sum(s.changed for s in saved) == 500 - 1  # the first sets 1000 to what it was
    assert LabelEvent.objects.count() == 1 + 499


def test_labels_changed_each_with_its_own_lead_time_are_one_update_and_land_as_sent(
    query, django_assert_max_num_queries
):
    # The labeling page measures a lead time per image: an UPDATE per set of alike new values was then one
    # per label (31 statements for 50 labels before); now one UPDATE of the judgments, one of the labels,
    # and one of the query's tally (annotator/labels/tallies.py: what the dashboard reads instead of every label).
    ann = User.objects.create(username="ann")
    images = [1000 + n for n in range(5)]
    set_labels(query_id=query.id, changes=[LabelChange(i, "unsure") for i in images], user=ann, source="api")
    values = ("relevant", "not_relevant", "relevant", "not_relevant", "relevant")
    changes = [LabelChange(i, value, 300 + 7 * n) for n, (i, value) in enumerate(zip(images, values, strict=True))]
    with django_assert_max_num_queries(11):
        set_labels(query_id=query.id, changes=changes, user=ann, source="keyboard")
    stored = {j.image_id: (j.value, j.lead_time_ms, j.source) for j in Judgment.objects.filter(annotator=ann)}
    assert stored == {c.image_id: (c.value, c.lead_time_ms, "keyboard") for c in changes}
    assert dict(Label.objects.values_list("image_id", "value")) == dict(zip(images, values, strict=True))


def test_clearing_removes_only_the_writers_own_judgment(query):
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")
    set_label(query_id=query.id, image_id=1000, value="relevant", user=ann, source="click")
    saved = set_labels(
        query_id=query.id, changes=[LabelChange(1001, "relevant"), LabelChange(1000, "")], user=bob, source="click"
    )
    assert [s.changed for s in saved] == [True, False]  # bob had no judgment of 1000 to clear
    assert dict(Label.objects.values_list("image_id", "value")) == {1000: "relevant", 1001: "relevant"}
    assert Judgment.objects.get(image_id=1000).annotator == ann
