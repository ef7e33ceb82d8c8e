from django import forms

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
