"""The labeling page's forms: the search (text, species, like-this images, the lasso) and the example upload (also
the admin's inline, which shares its checks of the image)."""

import io
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.conf import settings
from django.core.files.base import ContentFile
from django.http import QueryDict
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from annotator.models import Query, QueryExample
from catalog import facade as taxa  # describe, species_for, UnknownTaxon
from common.api_params import strict_id
from common.formats import RASTER_TYPES


class ExampleUploadForm(forms.Form):
    """An example image uploaded on the labeling page: it starts a ranking by text and example together."""

    image = forms.FileField(help_text="A JPEG, PNG, WebP or GIF photo of what the query means.")
    note = forms.CharField(max_length=500, required=False)

    def clean_image(self) -> "ContentFile[bytes]":
        upload, picture, content_type = read_example_image(self.cleaned_data["image"])
        self.cleaned_data["picture"], self.cleaned_data["content_type"] = picture, content_type
        return upload


class ExampleInlineForm(forms.ModelForm):
    """The admin's example rows: an uploaded file meets the labeling page's checks and is re-encoded too."""

    class Meta:
        model = QueryExample
        fields = ["query", "image", "upload", "relevant", "note"]

    def clean_upload(self) -> Any:
        upload = self.cleaned_data.get("upload")
        if not upload or not hasattr(upload, "content_type"):  # nothing new uploaded
            return upload
        return read_example_image(upload)[0]


# Decoding an image takes width x height x (bytes a pixel), and the RGB copy embedding needs another 4 (Pillow keeps
# RGB in 4 bytes a pixel): a 97 KB PNG of 9999 x 10000 took a web worker from 675 MB to 1,440 MB. So the bound is
# on memory, not on pixels alone.
PIXEL_BYTES = {"1": 1, "L": 1, "P": 1, "LA": 2, "PA": 2, "La": 2, "I;16": 2}  # every other mode: 4


def decoded_bytes(width: int, height: int, mode: str) -> int:
    """Memory, in bytes, that Pillow takes to decode an image of `mode` and hold its RGB copy."""
    copy = 0 if mode == "RGB" else 4
    return width * height * (PIXEL_BYTES.get(mode, 4) + copy)


def read_example_image(upload: Any) -> "tuple[ContentFile[bytes], PILImage.Image, str]":  # an UploadedFile
    """(the file to keep, the RGB picture, its content type) of an uploaded example, or ValidationError
    with what to fix. The file kept is the decoded picture encoded again, never the uploaded bytes: whatever
    rode along in them (HTML after a JPEG's end, metadata) is gone, and its name's extension is the format."""
    limit = settings.QUIRE_MAX_EXAMPLE_BYTES
    if upload.size > limit:
        raise forms.ValidationError(f"The image is {upload.size / 1e6:.1f} MB; upload one under {limit / 1e6:.0f} MB.")
    unreadable = "That file is not an image Quire can read: upload a JPEG, PNG, WebP or GIF."
    try:
        with PILImage.open(upload) as probe:
            kind, size, mode = probe.format, probe.size, probe.mode
            probe.verify()  # a truncated or corrupt file fails here, before anything is kept
    except (UnidentifiedImageError, OSError, SyntaxError, ValueError, PILImage.DecompressionBombError):
        raise forms.ValidationError(unreadable) from None
    if kind not in RASTER_TYPES:
        raise forms.ValidationError(f"{kind} images are not taken: upload a JPEG, PNG, WebP or GIF.")
    memory_limit = settings.QUIRE_MAX_EXAMPLE_DECODED_BYTES
    if decoded_bytes(*size, mode) > memory_limit:
        raise forms.ValidationError(
            f"The image is {size[0]:,} x {size[1]:,} pixels, too large to open safely (over "
            f"{memory_limit / 1e6:.0f} MB once decoded): upload a smaller one."
        )
    upload.seek(0)
    try:
        with PILImage.open(upload) as decoded:
            picture = decoded.convert("RGB")
    except (OSError, SyntaxError, ValueError, PILImage.DecompressionBombError):
        raise forms.ValidationError(unreadable) from None
    # Nothing of the upload's metadata rides along: Pillow writes a JPEG's comment (and EXIF, XMP) back from
    # `info`, so a `<script>` in a comment survived the re-encoding (issue 37).
    picture.info = {}
    encoded = io.BytesIO()
    kept = "JPEG" if kind == "JPEG" else "PNG"  # lossless for everything but photos already lossy
    picture.save(encoded, kept, quality=95)  # PNG's encoder takes no quality and ignores it
    return ContentFile(encoded.getvalue(), name=f"example.{kept.lower()}"), picture, RASTER_TYPES[kept]


# --- the labeling page's search, as the annotator set it in the address ----------------------------------

MAX_LIKE = 20  # "more like this" images at most


class ManyValues(forms.Field):
    """A parameter given any number of times (?taxon=a&taxon=b): the distinct non-empty values, in order."""

    widget = forms.MultipleHiddenInput

    def to_python(self, value: Any) -> list[str]:
        return list(dict.fromkeys(v.strip() for v in value or () if isinstance(v, str) and v.strip()))


@dataclass(frozen=True)
class TaxonFilter:
    value: str  # as typed
    label: str  # as shown: the taxon's rank and name
    ids: frozenset[int] = frozenset()  # its species
    error: str = ""  # why it is left out


@dataclass(frozen=True)
class SearchState:
    """What the labeling page ranks and shows: the text, the species filters, hide-labeled, the page size,
    the ranking and its "more like this" images, and the address's parameters to keep in links."""

    q: str
    ranking: str
    size: int
    hide_labeled: bool
    filters: list[TaxonFilter] = field(default_factory=list)
    like: list[int] = field(default_factory=list)
    querystring: str = ""
    within: str = ""  # a lasso on the map, as `x1,y1,x2,y2,...` in the map's coordinates (search.polygon)
    within_ids: Any = None  # the lasso's image ids (a numpy array; annotator.map.points), None: no lasso
    within_error: str = ""  # why the address's lasso is left out

    @property
    def taxon_ids(self) -> set[int] | None:
        """The species of the valid filters together; None when there is no valid filter."""
        valid = [item.ids for item in self.filters if not item.error]
        return set().union(*valid) if valid else None

    @property
    def nothing_shown(self) -> str:
        """Why a ranking's first page holds no image, in what the annotator set (the grid would be blank)."""
        species = self.taxon_ids is not None
        lasso = self.within_ids is not None
        if species and lasso:
            why = "the species filters and the map's selection have no image in common: remove a chip or draw the "
            why += "selection again"
        elif species:
            why = "no image of the filters' species is in the collection: remove a chip"
        elif lasso:
            why = "the map's selection holds no image of the collection: draw it again"
        elif self.hide_labeled:
            why = "every image of this ranking is labeled and labeled images are hidden: untick hide labeled"
        elif self.ranking == "check":
            why = "no image of the check waits for your look"
        else:
            why = "the ranking holds no image yet"
        return f"No image to show: {why}."

    @property
    def filter_errors(self) -> list[str]:
        return [item.error for item in self.filters if item.error] + ([self.within_error] if self.within_error else [])


class LabelingSearchForm(forms.Form):
    """The labeling page's address (q, taxon, size, hide, like, within). Nothing in it is ever refused: a value
    that makes no sense falls back to the default, and an unknown taxon becomes a filter that says why
    it is left out, so a shared or stale link always opens the page."""

    q = forms.CharField(required=False, strip=True)
    taxon = ManyValues(required=False)
    size = forms.IntegerField(required=False)
    hide = forms.CharField(required=False)
    like = ManyValues(required=False)
    within = forms.CharField(required=False, strip=True)

    def __init__(self, params: QueryDict, *, page_sizes: tuple[int, ...]) -> None:
        super().__init__(params)  # ManyValues' widget reads its repeated values with getlist
        self.page_sizes = page_sizes

    def state(self, query: Query, ranking: str, querystring: str) -> SearchState:
        """The page's SearchState: the form's values, defaults where they are missing or make no sense."""
        self.is_valid()  # fields that fail (a size of "x") are simply absent from cleaned_data
        values = self.cleaned_data
        size = values.get("size")
        likes = (strict_id(value) for value in values.get("like") or ())
        return SearchState(
            q=values.get("q") or query.text,
            ranking=ranking,
            size=size if size in self.page_sizes else self.page_sizes[0],
            hide_labeled=values.get("hide") == "1",
            filters=[_taxon_filter(value) for value in values.get("taxon") or ()],
            like=[image_id for image_id in likes if image_id is not None][:MAX_LIKE],
            querystring=querystring,
            within=values.get("within") or "",
        )


def _taxon_filter(value: str) -> TaxonFilter:
    try:
        return TaxonFilter(value, taxa.describe(value), frozenset(taxa.species_for(value)))
    except taxa.UnknownTaxon as error:
        return TaxonFilter(value, value, error=f"{error} This filter is left out.")
