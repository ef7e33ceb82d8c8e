"""The labeling page's address as a form: every value that makes no sense falls back, none is refused."""

import pytest
from django.http import QueryDict

from annotator.models import Query
from annotator.web.labeling_forms import MAX_LIKE, LabelingSearchForm

pytestmark = pytest.mark.django_db

SIZES = (50, 100, 200)


def state(address: str):
    query = Query(pk=7, text="a heron with a fish")
    return LabelingSearchForm(QueryDict(address), page_sizes=SIZES).state(query, "text", "kept=1")


def test_the_address_becomes_the_pages_search():
    likes = "&".join(f"like={n}" for n in range(1, 30))
    got = state(f"q=+wading+bird+&size=100&hide=1&{likes}&like=x&like=%D9%A3")
    assert (got.q, got.size, got.hide_labeled, got.querystring) == ("wading bird", 100, True, "kept=1")
    assert got.like == list(range(1, MAX_LIKE + 1))  # ids only, in order, 20 at most; "x" and "٣" left out
    assert got.filters == [] and got.taxon_ids is None and got.filter_errors == []


@pytest.mark.parametrize(
    "address",
    ["", "q=", "q=%20%20", "q=bird%00", "size=x", "size=7", "size=99999999999999999999999", "size=-50", "hide=yes"],
)
def test_what_makes_no_sense_falls_back_to_the_default(address):
    got = state(address)
    assert got.size == 50 and not got.hide_labeled
    assert got.q == "a heron with a fish"  # no text, blanks, or a NUL byte: the query's own text


def test_an_unknown_taxon_is_a_filter_that_says_why_it_is_left_out():
    got = state("taxon=Ardea+nowhere&taxon=Ardea+nowhere&taxon=")
    assert [item.value for item in got.filters] == ["Ardea nowhere"]  # repeated and empty ones dropped
    assert got.filters[0].error.endswith("This filter is left out.") and got.filter_errors == [got.filters[0].error]
    assert got.taxon_ids is None  # no valid filter: the whole collection
