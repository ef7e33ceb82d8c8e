import numpy as np
import pytest
from PIL import Image as PILImage

from annotator.models import Image, ImageRoot, Taxon
from search.clip import ClipSpec

TAXA = [  # id, scientific name, common name, genus, family
    (10, "Rynchops niger", "Black Skimmer", "Rynchops", "Laridae"),
    (11, "Fratercula arctica", "Atlantic Puffin", "Fratercula", "Alcidae"),
    (12, "Leucophaeus atricilla", "Laughing Gull", "Leucophaeus", "Laridae"),
]


@pytest.fixture
def tiny_spec(tiny_settings):
    return ClipSpec(tiny_settings.QUIRE_CLIP_MODEL, tiny_settings.QUIRE_CLIP_PRETRAINED)


def make_collection(folder, count: int, *, first_id: int = 1, broken: dict | None = None) -> list[int]:
    """`count` real JPEGs over three taxa (images of a taxon share a colour), in the database and on disk.

    `broken` maps an image id to "missing" (no file) or "corrupt" (bytes that are no image).
    """
    broken = broken or {}
    root, _ = ImageRoot.objects.get_or_create(path=str(folder))
    for taxon_id, scientific, common, genus, family in TAXA:
        Taxon.objects.get_or_create(
            id=taxon_id,
            defaults=dict(scientific_name=scientific, common_name=common, genus=genus, family=family, class_name="Aves", kingdom="Animalia"),
        )
    rng = np.random.default_rng(first_id)
    ids = list(range(first_id, first_id + count))
    for image_id in ids:
        taxon = TAXA[image_id % 3][0]
        path = folder / f"{taxon}/{image_id}.jpg"
        path.parent.mkdir(parents=True, exist_ok=True)
        if broken.get(image_id) == "corrupt":
            path.write_bytes(b"not a JPEG at all")
        elif broken.get(image_id) != "missing":
            base = np.array([(200, 40, 40), (40, 200, 40), (40, 40, 200)][image_id % 3], dtype=np.int16)
            pixels = np.clip(base + rng.integers(-40, 40, size=(48, 64, 3)), 0, 255).astype(np.uint8)
            PILImage.fromarray(pixels).save(path, quality=90)
        Image.objects.create(id=image_id, root=root, file_name=f"{taxon}/{image_id}.jpg", taxon_id=taxon, width=64, height=48)
    return ids
