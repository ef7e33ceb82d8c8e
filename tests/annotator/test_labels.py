import pytest
from django.contrib.auth.models import User

from annotator.labels import clear_label, set_label, set_labels_in_bulk
from annotator.models import Label, LabelEvent, Query
from catalog.importers import import_inat
from tests.factories import inat_document

pytestmark = pytest.mark.django_db


@pytest.fixture
def query(write_json):
    import_inat(write_json(inat_document(images=5)))
    return Query.objects.create(text="Black Skimmer performing skimming")


def history(query):
    return list(LabelEvent.objects.filter(query=query).values_list("image_id", "old_value", "new_value", "source"))


def test_each_change_is_stored_and_recorded(query):
    ann, bob = User.objects.create(username="ann"), User.objects.create(username="bob")

    label, changed = set_label(query_id=query.id, image_id=1000, value="relevant", user=ann, source="keyboard")
    assert changed and label.annotator == ann
    _, changed = set_label(query_id=query.id, image_id=1000, value="relevant", user=ann, source="keyboard")
    assert not changed
    label, _ = set_label(query_id=query.id, image_id=1000, value="unsure", user=bob, source="click")

    assert Label.objects.get(query=query, image_id=1000).value == "unsure"
    assert label.annotator == bob
    assert history(query) == [(1000, "", "relevant", "keyboard"), (1000, "relevant", "unsure", "click")]


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
