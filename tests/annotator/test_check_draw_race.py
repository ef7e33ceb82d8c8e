"""Issue 51: a completeness check drawn while annotators write, on PostgreSQL (real threads, each with its own
connection). The draw reads the frame's confirmed positives inside its transaction, under the final-label row locks
the writes take, so what it froze is what was committed at one moment: every confirmation committed before the draw
began is counted found, none is both found and sampled, and every sampled image gets its second look whatever was
being written."""

import time

import pytest
from django.contrib.auth.models import User
from django.db import connection

from annotator.completeness import check_requests, checks
from annotator.completeness.frames import unpack
from annotator.labels import LabelChange, set_labels
from annotator.models import CompletenessCheck, OverlapImage, Query
from catalog.importers import import_inat
from catalog.models import Image
from tests.factories import inat_document
from tests.threads import run_per_image

pytestmark = pytest.mark.django_db(transaction=True)


def test_a_check_drawn_while_positives_are_confirmed_freezes_one_consistent_moment(write_json):
    if connection.vendor != "postgresql":
        pytest.skip("the race needs PostgreSQL's row locks (CI runs it: DATABASE_URL)")
    import_inat(write_json(inat_document(images=40)))
    query = Query.objects.create(text="Black Skimmer performing skimming")
    ann = User.objects.create_user("ann", password="pw")
    bob = User.objects.create_user("bob", password="pw")
    images = sorted(Image.objects.values_list("id", flat=True))
    positives = images[:24]
    set_labels(query_id=query.pk, changes=[LabelChange(i, "relevant") for i in positives], user=ann, source="keyboard")
    set_labels(query_id=query.pk, changes=[LabelChange(i, "not_relevant") for i in images[24:36]], user=ann,
               source="keyboard")  # fmt: skip
    committed: dict[int, float] = {}
    drawn: dict[str, float] = {}
    # Drawn while positives are being confirmed: some still wait, so the draw is told to go ahead (issue 62).
    asked = check_requests.read_request(
        {"target_recall": 0.5, "confidence": 0.9, "frame": {"kind": "collection"}, "with_unconfirmed": True}
    )

    def confirm(image_id: int):
        def run():
            time.sleep((image_id % 12) / 200)
            set_labels(query_id=query.pk, changes=[LabelChange(image_id, "relevant")], user=bob, source="keyboard")
            committed[image_id] = time.monotonic()

        return run

    def draw():
        time.sleep(0.02)
        drawn["start"] = time.monotonic()
        check, _ = checks.draw(Query.objects.get(pk=query.pk), asked, None)
        drawn["end"] = time.monotonic()
        return check

    results = run_per_image([[draw, *[confirm(i) for i in positives]]])
    assert not [r for r in results if isinstance(r, Exception)], results
    check = CompletenessCheck.objects.get()
    found = set(unpack(check.stratum.found_ids).tolist())
    sample = set(check.images.values_list("image_id", flat=True))
    assert check.found_at_draw == len(found) and found <= set(positives)
    assert {i for i, at in committed.items() if at < drawn["start"]} <= found  # committed before: counted
    assert not found & sample  # a positive counted found is never in the sample
    assert check.sampled_from == len(images) - len(found)
    overlap = set(OverlapImage.objects.filter(query=query).values_list("image_id", flat=True))
    judged = set(images[:36])
    assert sample & judged <= overlap  # a fresh look at a judged image is blind to the old vote, whatever was written
