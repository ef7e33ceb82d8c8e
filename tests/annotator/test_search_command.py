import json

import numpy as np
import pytest
from django.contrib.auth import get_user_model
from django.core.management import CommandError, call_command

from annotator.labels import set_label
from annotator.models import LabelSource, LabelValue, Query
from search.clip import get_embedder
from search.exceptions import SearchError
from search.facade import search
from search.spec import store_root
from search.store import EmbeddingStore
from tests.factories import make_collection

pytestmark = pytest.mark.django_db


@pytest.fixture
def embedded(tiny_spec, tmp_path):
    make_collection(tmp_path / "images", 30)
    call_command("embed")
    return EmbeddingStore.existing(store_root(), tiny_spec.name).load()


def brute_force(embeddings, vector, rows=None):
    rows = np.arange(len(embeddings)) if rows is None else rows
    scores = embeddings.vectors[rows].astype(np.float32) @ vector
    ids = embeddings.image_ids[rows]
    return [int(ids[i]) for i in np.lexsort((ids, -scores))]


def run(*args) -> list[dict]:
    from io import StringIO

    out = StringIO()
    call_command("search", *args, "--json", stdout=out)
    return [json.loads(line) for line in out.getvalue().splitlines()]


def test_text_search_equals_a_brute_force_ranking_of_the_text_vector(embedded, tiny_spec):
    vector = get_embedder(tiny_spec).encode_text(["puffins carrying food"])[0]
    rows = run("puffins carrying food", "-k", "10")
    assert [row["image_id"] for row in rows] == brute_force(embedded, vector)[:10]
    assert [row["rank"] for row in rows] == list(range(1, 11))
    assert rows[0]["score"] >= rows[-1]["score"]


def test_taxon_filters_at_any_rank_rank_the_whole_subset(embedded, tiny_spec):
    vector = get_embedder(tiny_spec).encode_text(["a gull"])[0]
    laridae = run("a gull", "--taxon", "laridae", "-k", "100")  # family, any case: Rynchops + Leucophaeus
    assert {row["taxon"] for row in laridae} == {"Rynchops niger", "Leucophaeus atricilla"}
    rows = np.flatnonzero(np.isin(embedded.taxon_ids, [10, 12]))
    assert [row["image_id"] for row in laridae] == brute_force(embedded, vector, rows)
    by_common_name = run("a gull", "--taxon", "Atlantic Puffin", "--taxon", "Rynchops niger", "-k", "100")
    assert {row["taxon_id"] for row in by_common_name} == {10, 11} and len(by_common_name) == 20


def test_paging_and_more_like_this(embedded):
    everything = [row["image_id"] for row in run("--image", "5", "-k", "30")]
    assert 5 not in everything  # the image asked about is not its own first look-alike
    assert everything == [hit.image_id for hit in search(image_id=5, k=31) if hit.image_id != 5][:30]
    pages = [
        row["image_id"]
        for offset in (0, 7, 14, 21, 28)
        for row in run("--image", "5", "-k", "7", "--offset", str(offset))
    ]
    assert pages == everything


def test_images_labeled_for_a_query_can_be_left_out(embedded):
    query = Query.objects.create(text="red birds")
    top = [row["image_id"] for row in run("red birds", "-k", "5")]
    user = get_user_model().objects.create(username="ann")
    for image_id in top[:2]:
        set_label(query_id=query.pk, image_id=image_id, value=LabelValue.RELEVANT, user=user, source=LabelSource.API)
    rest = [row["image_id"] for row in run("red birds", "-k", "3", "--exclude-labeled", str(query.pk))]
    assert rest == top[2:5]


def test_search_by_an_uploaded_image_and_by_a_vector(embedded, tiny_spec, tmp_path):
    from PIL import Image

    uploaded = Image.open(tmp_path / "images" / "11" / "4.jpg")
    assert search(image=uploaded, k=1)[0].image_id == 4
    row = int(np.flatnonzero(embedded.image_ids == 9)[0])
    assert search(vector=embedded.vectors[row].astype(np.float32) * 3, k=1)[0].image_id == 9
    with pytest.raises(SearchError, match="has 5 dimensions; this index has 64"):
        search(vector=[1, 2, 3, 4, 5])


@pytest.mark.parametrize(
    "args, message",
    [
        (["   "], "The query text is empty"),
        ([], "Give a query text or --image ID"),
        (["x", "--image", "3"], "Give a query text or --image ID"),
        (["birds", "--taxon", "Laridea"], "No taxon is called 'Laridea'. Did you mean 'Laridae'"),
        (["--image", "999"], "Image 999 has no embedding"),
        (["--image", "99999999999999999999"], "Image 99999999999999999999 has no embedding"),  # past int64
        (["birds", "-k", "0"], "k must be a positive whole number"),
    ],
)
def test_bad_input_gets_a_clear_error(embedded, args, message):
    with pytest.raises(CommandError, match=message):
        call_command("search", *args)


def test_no_index_yet_says_what_to_run(tiny_spec):
    with pytest.raises(CommandError, match="No search index has been built .* run `manage.py build_index`"):
        call_command("search", "birds")


def test_a_model_of_another_dimension_than_the_index_is_refused(tiny_settings, tmp_path):
    from search import clip
    from search.tiny_model import write_tiny_model

    folder = tmp_path / "model"
    tiny_settings.QUIRE_CLIP_PRETRAINED = write_tiny_model(folder)
    make_collection(tmp_path / "images", 6)
    call_command("embed")
    write_tiny_model(folder, embed_dim=32)  # the weights in the folder were swapped after indexing
    clip._loaded.clear()
    with pytest.raises(CommandError, match="gives 32-dimensional vectors but the search index holds 64"):
        call_command("search", "birds")
    clip._loaded.clear()
