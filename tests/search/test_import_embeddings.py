import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from django.core.management import CommandError, call_command

from search.facade import search
from search.spec import store_root
from search.store import EmbeddingStore
from tests.factories import make_collection

pytestmark = pytest.mark.django_db

PREFIX = "/mnt/inat24/images/"  # where the machine that embedded them kept the images


def write_layout(folder, groups, dim=16, seed=0):
    """clip-retrieval output: img_emb/img_emb_N.npy and metadata/metadata_N.parquet per group of file names."""
    rng = np.random.default_rng(seed)
    (folder / "img_emb").mkdir(parents=True)
    (folder / "metadata").mkdir()
    vectors = {}
    for number, names in enumerate(groups):
        block = rng.normal(size=(len(names), dim)).astype(np.float16)
        np.save(folder / "img_emb" / f"img_emb_{number}.npy", block)
        pq.write_table(
            pa.table({"image_path": [PREFIX + name for name in names], "caption": [""] * len(names)}),
            folder / "metadata" / f"metadata_{number}.parquet",
        )
        vectors.update(zip(names, block.astype(np.float32), strict=True))
    return vectors


@pytest.fixture
def collection(tiny_spec, tmp_path):
    make_collection(tmp_path / "images", 10)
    from catalog.models import Image

    return dict(Image.objects.values_list("file_name", "id"))


def test_import_maps_paths_to_images_normalises_and_builds_the_index(collection, tiny_spec, tmp_path, capsys):
    names = sorted(collection)
    vectors = write_layout(tmp_path / "emb", [names[:6], names[6:]])
    call_command("import_embeddings", tmp_path / "emb")
    assert "Imported 10 vectors of 16 dimensions from 2 file(s)" in capsys.readouterr().out
    embeddings = EmbeddingStore.existing(store_root(), tiny_spec.name).load()
    assert sorted(embeddings.image_ids.tolist()) == sorted(collection.values())
    name = names[3]
    row = int(np.flatnonzero(embeddings.image_ids == collection[name])[0])
    expected = vectors[name] / np.linalg.norm(vectors[name])
    np.testing.assert_allclose(embeddings.vectors[row].astype(np.float32), expected, atol=2e-3)
    assert embeddings.taxon_ids[row] == collection[name] % 3 + 10
    assert search(vector=vectors[name], k=1)[0].image_id == collection[name]


def broken_layouts(folder, names):
    """Each yields a (layout folder, expected message) for a bad directory."""
    bad = folder / "rows"
    write_layout(bad, [names[:4]])
    np.save(bad / "img_emb" / "img_emb_0.npy", np.ones((3, 16), np.float16))
    yield bad, "metadata_0.parquet: 4 rows, but img_emb_0.npy has 3 vectors"

    unknown = folder / "unknown"
    write_layout(unknown, [names[:2] + ["elsewhere/0.jpg"]])
    yield unknown, "row 3: image_path '/mnt/inat24/images/elsewhere/0.jpg' matches no image"

    unpaired = folder / "unpaired"
    write_layout(unpaired, [names[:2], names[2:4]])
    (unpaired / "metadata" / "metadata_1.parquet").unlink()
    yield unpaired, "are not numbered alike"

    empty = folder / "empty"
    empty.mkdir()
    yield empty, "no img_emb/img_emb_\\*.npy files: expected the clip-retrieval layout"

    wrong_dim = folder / "dim"
    write_layout(wrong_dim, [names[:2]], dim=8)
    yield wrong_dim, "not the configured .* \\(8 dimensions\\)"

    nan = folder / "nan"
    write_layout(nan, [names[:2], names[2:4]])
    np.save(nan / "img_emb" / "img_emb_1.npy", np.full((2, 16), np.nan, np.float16))
    yield nan, "img_emb_1.npy: some vectors are zero, infinite or NaN"

    not_parquet = folder / "notparquet"
    write_layout(not_parquet, [names[:2]])
    (not_parquet / "metadata" / "metadata_0.parquet").write_text("image_path\nx.jpg\n")
    yield not_parquet, "cannot read an image_path column"


def test_bad_directories_get_a_clear_error_and_leave_the_store_as_it_was(collection, tiny_spec, tmp_path):
    names = sorted(collection)
    write_layout(tmp_path / "good", [names])
    call_command("import_embeddings", tmp_path / "good", "--no-index")
    store = EmbeddingStore.existing(store_root(), tiny_spec.name)
    before = store.load().vectors.copy()
    for folder, message in broken_layouts(tmp_path / "bad", names):
        with pytest.raises(CommandError, match=message):
            call_command("import_embeddings", folder)
        assert store.parts() == []
        np.testing.assert_array_equal(store.load().vectors, before)
