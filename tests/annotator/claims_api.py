"""What the completeness tests do through the API, as a user of it would (helpers, not tests)."""

from rest_framework.test import APIClient


def api_for(user):
    api = APIClient()
    api.force_authenticate(user)
    return api


def label(user, query, image_ids, value):
    """`user` judges `image_ids` of `query` `value` through the labels API (200, or the test fails)."""
    answer = api_for(user).post(
        f"/api/queries/{query.pk}/labels/",
        {"labels": [{"image": image_id, "value": value} for image_id in image_ids]},
        format="json",
    )
    assert answer.status_code == 200, answer.content


def check_candidates(user, query, k=1000):
    """The open checks' images `user` has not judged, as the API's candidates (strategy=check) give them."""
    answer = api_for(user).get(f"/api/queries/{query.pk}/candidates/", {"strategy": "check", "k": k})
    assert answer.status_code == 200, answer.content
    return [row["image_id"] for row in answer.json()["results"]]
