from django import forms

from .models import Query


class QueryForm(forms.ModelForm):
    """Adding a query from the query list."""

    class Meta:
        model = Query
        fields = ["text", "supercategory", "category", "iconic_group", "split"]
        widgets = {"text": forms.TextInput(attrs={"placeholder": "what the images should show", "size": 50})}
        error_messages = {"text": {"required": "Type the query: what the images should show."}}


class TrackingForm(forms.ModelForm):
    """The tracking-sheet fields an admin or annotator edits: status, fully labeled?, notes."""

    class Meta:
        model = Query
        fields = ["status", "fully_labeled", "notes"]
        widgets = {"notes": forms.Textarea(attrs={"rows": 3, "cols": 60})}
