import numpy as np
import pytest
from PIL import Image

from search import clip as search_clip
from search.clip import ClipEmbedder, ClipSpec, WeightsUnavailable, configured_spec, get_embedder
from search.tiny_model import write_tiny_model


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """The tiny model, saved in open_clip's local-dir format and loaded through the users' path."""
    folder = tmp_path_factory.mktemp("tiny-clip")
    return ClipEmbedder(ClipSpec("", write_tiny_model(folder)))


def test_local_dir_model_loads_and_embeds_texts_and_images(tiny):
    assert tiny.dim == 64 and tiny.device == "cpu"
    texts = tiny.encode_text(["Black Skimmer performing skimming", "a red fox"])
    images = tiny.encode_images([Image.new("RGB", (120, 90), "red"), Image.new("L", (40, 40), 200)])
    for vectors in (texts, images):
        assert vectors.shape == (2, 64) and vectors.dtype == np.float32
        np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, rtol=1e-5)
    assert not np.allclose(texts[0], texts[1]) and not np.allclose(images[0], images[1])


def test_text_vectors_are_cached_and_the_same_on_reuse(tiny):
    first = tiny.encode_text(["puffins carrying food"])
    assert "puffins carrying food" in tiny._text_cache
    np.testing.assert_array_equal(tiny.encode_text(["puffins carrying food"]), first)


def test_same_seed_same_model(tmp_path, tiny):
    again = ClipEmbedder(ClipSpec("", write_tiny_model(tmp_path / "again")))
    np.testing.assert_allclose(again.encode_text(["a fox"]), tiny.encode_text(["a fox"]), atol=1e-6)


def test_weights_that_cannot_be_loaded_say_what_to_set(tmp_path):
    with pytest.raises(WeightsUnavailable, match="Set QUIRE_CLIP_PRETRAINED to a local checkpoint file"):
        ClipEmbedder(ClipSpec("ViT-B-32", "laion2b_s34b_b79k"))  # the hub is offline in tests
    with pytest.raises(WeightsUnavailable, match="is neither a file nor a pretrained tag of ViT-B-32"):
        ClipEmbedder(ClipSpec("ViT-B-32", str(tmp_path / "missing.pt")))
    empty = tmp_path / "no-weights"
    write_tiny_model(empty)
    (empty / "open_clip_model.safetensors").unlink()
    with pytest.raises(WeightsUnavailable, match="no weights"):
        ClipEmbedder(ClipSpec("", f"local-dir:{empty}"))


def test_the_configured_model_is_loaded_once_per_process(settings, tmp_path):
    settings.QUIRE_CLIP_MODEL = "ignored-for-local-dir"
    settings.QUIRE_CLIP_PRETRAINED = write_tiny_model(tmp_path / "configured")
    assert configured_spec().name == settings.QUIRE_CLIP_PRETRAINED
    assert get_embedder() is get_embedder(configured_spec())


def test_half_precision_weights_get_half_pixels(tmp_path):
    """On a GPU open_clip loads the model with precision="fp16": convolution and linear weights halved, the
    class embedding and layer norms kept in fp32. Pixels must go in at the image tower's dtype, not the first
    parameter's (that sent fp32 pixels into a half convolution and failed every GPU embedding job; found on an
    H100). The same conversion, done here on the CPU, shows it without a GPU."""
    import open_clip  # search.clip has already made torchvision importable
    import torch  # as above

    embedder = ClipEmbedder(ClipSpec("", write_tiny_model(tmp_path / "half")))
    open_clip.convert_weights_to_lp(embedder.model, dtype=torch.float16)
    embedder.input_dtype = search_clip._input_dtype(embedder.model.visual)
    assert next(embedder.model.parameters()).dtype == torch.float32  # the trap: the first parameter says fp32
    assert embedder.input_dtype == torch.float16
    vectors = embedder.encode_images([Image.new("RGB", (120, 90), "red"), Image.new("RGB", (50, 70), "blue")])
    assert vectors.shape == (2, 64) and vectors.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vectors, axis=1), 1, rtol=1e-3)
