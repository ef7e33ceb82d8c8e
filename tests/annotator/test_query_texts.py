"""One query a text (issue 24: a double click on "Add and start labeling" made two): refused by the
database whatever the path, said in the form with the other query's id, and named by the importer."""

import pytest
from django.db import IntegrityError, transaction
from django.urls import reverse

from annotator.inquire.importers import InputError, import_queries
from annotator.models import Query
from annotator.web import query_form as forms

pytestmark = pytest.mark.django_db

HEADER = "query_id,query_text,supercategory,category,iconic_group\n"


def test_the_database_refuses_the_same_text_twice_spaces_and_case_aside():
    Query.objects.create(text="Black Skimmer performing skimming")
    with pytest.raises(IntegrityError), transaction.atomic():
        Query.objects.create(text="  black skimmer   PERFORMING skimming ")
    assert Query.objects.count() == 1


def test_renaming_a_query_keys_it_again_and_other_edits_leave_the_key_alone():
    first = Query.objects.create(text="a heron with a fish")
    second = Query.objects.create(text="a gull on a post")
    second.notes = "edited"
    second.save()
    second.text = "a gull on a pier"
    second.save(update_fields=["text"])
    assert Query.objects.create(text="a gull on a post").pk  # its old text is free again
    first.text = "A gull on a pier"
    with pytest.raises(IntegrityError), transaction.atomic():
        first.save(update_fields=["text"])


def test_adding_a_query_twice_says_which_query_has_the_text(admin_client):
    first = admin_client.post(reverse("home"), {"text": "a heron with a fish", "split": "other"})
    assert first.status_code == 302
    again = admin_client.post(reverse("home"), {"text": "A heron  with a fish", "split": "other"})
    assert again.status_code == 200
    query = Query.objects.get()
    assert f"Query {query.pk} already has this text" in again.content.decode()


def test_a_double_click_whose_other_half_saved_first_is_told_not_failed(admin_client, monkeypatch):
    """Both halves pass the form's check; the second reaches the database after the first stored the
    text: the database refuses it, and the page says so (not a 500)."""
    is_valid = forms.QueryForm.is_valid

    def and_then_the_other_half_saves(form):
        valid = is_valid(form)
        Query.objects.create(text=form.cleaned_data["text"])  # the first click's request, a moment earlier
        return valid

    monkeypatch.setattr(forms.QueryForm, "is_valid", and_then_the_other_half_saves)
    response = admin_client.post(reverse("home"), {"text": "a heron with a fish", "split": "other"})
    assert response.status_code == 200
    assert "already has this text" in response.content.decode()
    assert Query.objects.count() == 1


def test_the_importer_names_a_repeated_text(tmp_path):
    path = tmp_path / "inquire_queries_val.csv"
    path.write_text(HEADER + "1,a heron with a fish,,,\n2,A heron with a  fish,,,\n")
    with pytest.raises(InputError, match="query 2 has the text of query 1"):
        import_queries(path)
    assert not Query.objects.exists()
    Query.objects.create(id=9, text="a gull on a post")
    path.write_text(HEADER + "1,a heron with a fish,,,\n2,a gull on a post,,,\n")
    with pytest.raises(InputError, match="query 2 has the text of query 9, already stored"):
        import_queries(path)
    assert list(Query.objects.values_list("pk", flat=True)) == [9]
    path.write_text(HEADER + "9,a gull on a post,,,\n1,a heron with a fish,,,\n")  # its own text: an update
    assert import_queries(path).created == 1
