"""Image files for the browser: originals and cached thumbnails, only from the configured images roots.

The URL names an image id, never a path. The path comes from the database and
is still checked to stay inside its root, so a hostile file_name in an imported
file ("../../etc/passwd") cannot serve anything else.
"""

from pathlib import Path

from django.conf import settings
from PIL import Image as PILImage

from .files import atomic_path
from .models import Image

THUMBNAIL_SIZE = 256  # px on the long side: four columns of a grid on a laptop screen, sharp on HiDPI


class NotServable(Exception):
    """The image has no file that may be served; the text says why."""


def original_path(image: Image) -> Path:
    if image.root_id is None:
        raise NotServable(f"Image {image.pk} has no images root: import it with --images-root.")
    root = Path(image.root.path).resolve()
    path = (root / image.file_name).resolve()
    if not path.is_relative_to(root):
        raise NotServable(f"Image {image.pk}'s file name leaves its images root; it is not served.")
    if not path.is_file():
        raise NotServable(f"Image {image.pk}'s file is missing: {image.file_name}")
    return path


def thumbnail_path(image: Image) -> Path:
    """The cached thumbnail, made on first use (atomically: two requests at once both get a whole file)."""
    cached = Path(settings.QUIRE_DATA_DIR) / "thumbnails" / f"{image.pk % 1000:03d}" / f"{image.pk}.jpg"
    if cached.exists():
        return cached
    source = original_path(image)
    cached.parent.mkdir(parents=True, exist_ok=True)
    try:
        with PILImage.open(source) as picture, atomic_path(cached) as temporary:
            picture.draft("RGB", (THUMBNAIL_SIZE, THUMBNAIL_SIZE))
            picture = picture.convert("RGB")
            picture.thumbnail((THUMBNAIL_SIZE, THUMBNAIL_SIZE))
            picture.save(temporary, "JPEG", quality=82)
    except (OSError, ValueError, PILImage.DecompressionBombError) as error:
        raise NotServable(f"Image {image.pk} cannot be decoded: {error}") from None
    return cached
