"""What the completeness tests do through the API, as a user of it would (helpers, not tests)."""

import numpy as np
from rest_framework.test import APIClient

from annotator.completeness import certify

# What a check is tested at while the team has no blind looks at confirmed positives: each sampled image looked at
# once after the draw, a look assumed to miss 5%, the adjudicator 0.25% (issue 62).
ONE_LOOK = certify.pair_miss_rate(0.05, 1, 0.0025)


def seeded_order(check, query_ids, image_ids):
    """A draw's order from a fixed seed (in place of checks.sample_order's fresh entropy), for a test whose premise
    needs a given sample."""
    return np.random.default_rng(62).permutation(len(image_ids))


def api_for(user):
    api = APIClient()
    api.force_authenticate(user)
    return api


def label(user, query, image_ids, value):
    """`user` judges `image_ids` of `query` `value` through the labels API (200, or the test fails); no image, no
    request (an annotator with nothing left to look at sends nothing)."""
    if not image_ids:
        return
    answer = api_for(user).post(
        f"/api/queries/{query.pk}/labels/",
        {"labels": [{"image": image_id, "value": value} for image_id in image_ids]},
        format="json",
    )
    assert answer.status_code == 200, answer.content


def check_candidates(user, query, k=1000, share=False):
    """The open checks' images `user` has not judged, as the API's candidates (strategy=check) give them (`share`:
    only the user's own stretch of each sample, as the labeling page shows it)."""
    asked = {"strategy": "check", "k": k, **({"share": "1"} if share else {})}
    answer = api_for(user).get(f"/api/queries/{query.pk}/candidates/", asked)
    assert answer.status_code == 200, answer.content
    return [row["image_id"] for row in answer.json()["results"]]
