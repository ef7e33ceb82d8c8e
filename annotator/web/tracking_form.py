"""The tracking sheet of a query: what annotators and staff say of how far it is (the labeling page and the query's
page both show it)."""

from typing import Any

from django import forms

from annotator.models import Query


class TrackingForm(forms.ModelForm):
    """The tracking-sheet fields annotators and staff edit: status, fully labeled?, notes; staff also lock."""

    class Meta:
        model = Query
        fields = ["status", "fully_labeled", "notes", "locked"]
        widgets = {"notes": forms.Textarea(attrs={"rows": 3, "cols": 40})}
        labels = {"fully_labeled": "Fully labeled?", "locked": "Locked (done: only staff may change labels)"}

    def __init__(self, *args: Any, staff: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not staff:
            del self.fields["locked"]
