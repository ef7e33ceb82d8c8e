"""`./dev demo --team` (annotator/demo.py build_team): each member can do their role's work and no more, and the two
annotators share an overlap sample to judge blind."""

import pytest
from django.contrib.auth.models import User
from django.test import Client

from annotator.demo import OVERLAP_TOP, TEAM, build_team
from annotator.models import OverlapImage, Query

pytestmark = pytest.mark.django_db


def client_of(username: str) -> Client:
    client = Client()
    client.force_login(User.objects.get(username=username))
    return client


def test_each_member_of_the_demo_team_reaches_their_work_and_no_more(labeling):
    query = labeling["query"]
    added = build_team()
    assert added == OVERLAP_TOP * Query.objects.count()
    assert OverlapImage.objects.filter(query=query).count() == OVERLAP_TOP
    assert build_team() == 0  # again: nothing new, the same users
    assert {member.username for member in TEAM} <= set(User.objects.values_list("username", flat=True))
    pages = {
        "label": f"/queries/{query.pk}/",
        "adjudicate": f"/queries/{query.pk}/adjudicate",
        "dashboard": "/dashboard/",
        "releases": "/releases/",
        "evaluation": "/evaluation/",
    }
    can = {
        "annotator": {"label"},
        "annotator2": {"label"},
        "adjudicator": {"label", "adjudicate"},
        "lead": {"label", "adjudicate", "dashboard", "releases", "evaluation"},
    }
    for username, allowed in can.items():
        client = client_of(username)
        for page, url in pages.items():
            status = client.get(url).status_code
            assert (status == 200) == (page in allowed), (username, page, status)
    lead = User.objects.get(username="lead")
    assert lead.is_staff and not lead.is_superuser and lead.has_perm("annotator.change_query")


def test_the_lead_assigns_annotators_and_removes_an_example_on_the_querys_admin_page(labeling):
    """Issue 64: the dashboard tells the lead to assign annotators "in the admin", but the lead's admin page of a
    query had no assignment rows (only the superuser's had), and the lead could not delete an uploaded example."""
    from annotator.models import QueryExample

    query = labeling["query"]
    build_team()
    QueryExample.objects.create(query=query, image_id=1, relevant=True)
    page = client_of("lead").get(f"/admin/annotator/query/{query.pk}/change/").content.decode()
    assert 'name="assignments-TOTAL_FORMS"' in page  # the assignment rows, to add and remove annotators
    assert 'name="examples-0-DELETE"' in page  # the example's delete box
    autocomplete = {"app_label": "annotator", "model_name": "assignment", "field_name": "annotator", "term": "annot"}
    found = client_of("lead").get("/admin/autocomplete/", autocomplete)
    assert found.status_code == 200 and {"annotator", "annotator2"} <= {row["text"] for row in found.json()["results"]}
