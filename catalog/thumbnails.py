"""Image files for the browser and the embedder: originals and cached thumbnails, only from images roots.

The URL names an image id, never a path. The path comes from the database and is still checked
before any file is opened: its root must be an allowed images root (QUIRE_IMAGE_ROOTS, when set),
the path must stay inside that root (a hostile file_name such as "../../etc/passwd" cannot reach
anything else), it must end like a raster image, and the file must decode as JPEG, PNG, WebP or
GIF. An .svg or .html file listed in a metadata file is never served: it would run script on
Quire's origin.
"""

from pathlib import Path

from django.conf import settings
from PIL import Image as PILImage

from common.files import atomic_path
from common.formats import IMAGE_EXTENSIONS, RASTER_TYPES

from .models import Image

THUMBNAIL_SIZE = 256  # px on the long side: four columns of a grid on a laptop screen, sharp on HiDPI


class NotServable(Exception):
    """The image has no file that may be served; the text says why."""


def allowed_root(path: str | Path) -> bool:
    """Whether `path` may be an images root: inside one of QUIRE_IMAGE_ROOTS, or anywhere when that
    setting is empty (roots then come only from the operator's import commands)."""
    allowed = getattr(settings, "QUIRE_IMAGE_ROOTS", [])
    if not allowed:
        return True
    resolved = Path(path).resolve()
    return any(resolved.is_relative_to(Path(root).resolve()) for root in allowed)


def contained_path(root: str | None, file_name: str, *, image_id: int) -> Path:
    """The file of `file_name` under `root`, checked but not opened; NotServable says why it may not be read."""
    if not root:
        raise NotServable(f"Image {image_id} has no images root: import it with --images-root.")
    if not allowed_root(root):
        raise NotServable(f"Image {image_id}'s images root {root} is not in QUIRE_IMAGE_ROOTS; it is not served.")
    if not file_name.lower().endswith(IMAGE_EXTENSIONS):
        raise NotServable(
            f"Image {image_id}'s file {file_name!r} is not a JPEG, PNG, WebP or GIF file; it is not served."
        )
    base = Path(root).resolve()
    path = (base / file_name).resolve()
    if not path.is_relative_to(base):
        raise NotServable(f"Image {image_id}'s file name leaves its images root; it is not served.")
    return path


def original_path(image: Image) -> Path:
    path = contained_path(image.root.path if image.root else None, image.file_name, image_id=image.pk)
    if not path.is_file():
        raise NotServable(f"Image {image.pk}'s file is missing: {image.file_name}")
    return path


def original_file(image: Image) -> tuple[Path, str]:
    """The original file and its true content type, from the format Pillow decodes in it."""
    path = original_path(image)
    try:
        with PILImage.open(path, formats=list(RASTER_TYPES)) as picture:
            return path, RASTER_TYPES[picture.format or ""]  # formats= lets only these open
    except (OSError, ValueError, PILImage.DecompressionBombError):
        raise NotServable(f"Image {image.pk}'s file is not a JPEG, PNG, WebP or GIF image; it is not served.") from None


def thumbnail_path(image: Image) -> Path:
    """The cached thumbnail, made on first use (atomically: two requests at once both get a whole file)."""
    cached = Path(settings.QUIRE_DATA_DIR) / "thumbnails" / f"{image.pk % 1000:03d}" / f"{image.pk}.jpg"
    if cached.exists():
        return cached
    source = original_path(image)
    cached.parent.mkdir(parents=True, exist_ok=True)
    try:
        with PILImage.open(source, formats=list(RASTER_TYPES)) as picture, atomic_path(cached) as temporary:
            picture.draft("RGB", (THUMBNAIL_SIZE, THUMBNAIL_SIZE))
            small = picture.convert("RGB")
            small.thumbnail((THUMBNAIL_SIZE, THUMBNAIL_SIZE))
            small.save(temporary, "JPEG", quality=82)
    except (OSError, ValueError, PILImage.DecompressionBombError) as error:
        raise NotServable(f"Image {image.pk} cannot be decoded: {error}") from None
    return cached
