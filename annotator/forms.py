from django import forms
from django.conf import settings
from PIL import Image as PILImage
from PIL import UnidentifiedImageError

from catalog.formats import RASTER_TYPES

from .models import MAX_QUERY_TEXT, Query, normalised_text


class QueryForm(forms.ModelForm):
    """Adding a query from the query list."""

    class Meta:
        model = Query
        fields = ["text", "supercategory", "category", "iconic_group", "split"]
        widgets = {
            "text": forms.TextInput(
                attrs={"placeholder": "what the images should show", "size": 50, "maxlength": MAX_QUERY_TEXT}
            )
        }
        error_messages = {"text": {"required": "Type the query: what the images should show."}}

    def clean_text(self):
        text = " ".join(self.cleaned_data["text"].split())
        if len(text) > MAX_QUERY_TEXT:
            raise forms.ValidationError(
                f"A query is at most {MAX_QUERY_TEXT:,} characters; this one has {len(text):,}. Say it shorter."
            )
        wanted = normalised_text(text)
        # Few enough queries (hundreds) to compare in Python, where case-folding is Unicode-correct.
        for pk, existing in Query.objects.values_list("pk", "text"):
            if normalised_text(existing) == wanted:
                raise forms.ValidationError(f"Query {pk} already has this text: “{existing}”. Label that one.")
        return text


class TrackingForm(forms.ModelForm):
    """The tracking-sheet fields annotators and staff edit: status, fully labeled?, notes; staff also lock."""

    class Meta:
        model = Query
        fields = ["status", "fully_labeled", "notes", "locked"]
        widgets = {"notes": forms.Textarea(attrs={"rows": 3, "cols": 40})}
        labels = {"fully_labeled": "Fully labeled?", "locked": "Locked (done: only staff may change labels)"}

    def __init__(self, *args, staff: bool = False, **kwargs):
        super().__init__(*args, **kwargs)
        if not staff:
            del self.fields["locked"]


class ExampleUploadForm(forms.Form):
    """An example image uploaded on the labeling page: it starts a ranking by text and example together."""

    image = forms.FileField(help_text="A JPEG, PNG, WebP or GIF photo of what the query means.")
    note = forms.CharField(max_length=500, required=False)

    def clean_image(self):
        upload = self.cleaned_data["image"]
        limit = settings.QUIRE_MAX_EXAMPLE_BYTES
        if upload.size > limit:
            raise forms.ValidationError(
                f"The image is {upload.size / 1e6:.1f} MB; upload one under {limit / 1e6:.0f} MB."
            )
        try:
            with PILImage.open(upload) as probe:
                kind = probe.format
                probe.verify()  # a truncated or corrupt file fails here, before anything is kept
            upload.seek(0)
            with PILImage.open(upload) as picture:
                if picture.width * picture.height > 100_000_000:
                    raise forms.ValidationError("The image is over 100 megapixels; upload a smaller one.")
                self.cleaned_data["picture"] = picture.convert("RGB")
        except (UnidentifiedImageError, OSError, SyntaxError, ValueError, PILImage.DecompressionBombError):
            raise forms.ValidationError(
                "That file is not an image Quire can read: upload a JPEG, PNG, WebP or GIF."
            ) from None
        if kind not in RASTER_TYPES:
            raise forms.ValidationError(f"{kind} images are not taken: upload a JPEG, PNG, WebP or GIF.")
        upload.seek(0)
        # Kept under a name of our making whose extension is the decoded format: the file is later served
        # with the type that name implies, never with one an uploader chose ("photo.html").
        upload.name = f"example.{kind.lower()}"
        self.cleaned_data["content_type"] = RASTER_TYPES[kind]
        return upload
