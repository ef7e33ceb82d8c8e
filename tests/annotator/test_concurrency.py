"""Parallel Submits and clicks on the same images: no 500, and a history that explains every judgment (and
through annotator.labels.final, every final label).

Real threads, each with its own database connection and its own logged-in client, started
together by a barrier. Run on SQLite by `./dev test` and on PostgreSQL by CI (.ci/run runs this
module on both).
"""

from collections import Counter

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from annotator.labels.final import decide
from annotator.models import Judgment, Label, LabelEvent, Query
from catalog.importers import import_inat
from tests.factories import inat_document
from tests.threads import run_per_image

pytestmark = pytest.mark.django_db(transaction=True)

IMAGES = list(range(1000, 1040))


@pytest.fixture
def clients(write_json):
    import_inat(write_json(inat_document(images=len(IMAGES))))
    query = Query.objects.create(text="Black Skimmer performing skimming")
    users = [get_user_model().objects.create_user(f"ann{n}", password="pw") for n in range(6)]
    made = []
    for user in users:
        client = Client()
        client.force_login(user)
        made.append(client)
    return query, made


def run_together(work) -> list:
    """Run each callable in its own thread, all released at once; return their results (or exceptions)."""
    return run_per_image([work])


def explained_by_history(query) -> bool:
    """Replaying the events gives every annotator's stored judgment, and the final labels follow from them."""
    state: dict[tuple[int, int | None], str] = {}
    for event in LabelEvent.objects.filter(query=query).order_by("id"):
        key = (event.image_id, event.annotator_id)
        assert state.get(key, "") == event.old_value, f"event {event.pk} does not follow the one before"
        state[key] = event.new_value
    judgments = {key: value for key, value in state.items() if value}
    stored = {(j.image_id, j.annotator_id): j.value for j in Judgment.objects.filter(query=query)}
    assert judgments == stored
    by_image: dict[int, list[str]] = {}
    for (image_id, _), value in judgments.items():
        by_image.setdefault(image_id, []).append(value)
    finals = {image_id: decide(values)[0] for image_id, values in by_image.items()}
    return finals == dict(Label.objects.filter(query=query).values_list("image_id", "value"))


def test_parallel_submits_and_clicks_on_the_same_images(clients):
    query, made = clients
    submit_url, save_url = f"/queries/{query.pk}/submit", f"/queries/{query.pk}/labels"

    def submit(client):
        return lambda: client.post(submit_url, {"images": IMAGES}, content_type="application/json")

    def click(client, image_id, value):
        body = {"image": image_id, "value": value, "source": "click"}
        return lambda: client.post(save_url, body, content_type="application/json")

    for round_ in range(3):
        work = [submit(made[0]), submit(made[1]), submit(made[2])]
        for n, image_id in enumerate(IMAGES[round_::4]):
            work.append(click(made[3 + n % 3], image_id, ["relevant", "unsure", "not_relevant"][(n + round_) % 3]))
        responses = run_together(work)
        errors = [r for r in responses if isinstance(r, Exception) or r.status_code != 200]
        assert not errors, [r if isinstance(r, Exception) else (r.status_code, r.content[:200]) for r in errors]
        submitted = Counter(image_id for r in responses[:3] for image_id in r.json()["labeled"])
        assert all(count == 1 for count in submitted.values()), "an image was inserted by two Submits"
        if round_ == 0:  # every image was unlabeled: each one went to exactly one writer
            clicked = {image_id for r in responses[3:] for image_id in [r.json()["image"]]}
            assert set(submitted) | clicked == set(IMAGES)

    assert Label.objects.filter(query=query).count() == len(IMAGES)
    assert explained_by_history(query)


def test_a_double_clicked_submit_reports_what_it_wrote(clients):
    query, made = clients
    url = f"/queries/{query.pk}/submit"
    first, second = run_together([lambda: made[0].post(url, {"images": IMAGES}, content_type="application/json")] * 2)
    assert first.status_code == second.status_code == 200
    assert sorted(first.json()["labeled"] + second.json()["labeled"]) == IMAGES
    assert first.json()["written"] + second.json()["written"] == len(IMAGES)
    assert LabelEvent.objects.filter(query=query, source="submit").count() == len(IMAGES)
    assert explained_by_history(query)
