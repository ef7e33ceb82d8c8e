"""The query list's form: a query added by its text, refused with a sentence where it repeats one or is too long."""

from django import forms

from annotator.models import MAX_QUERY_TEXT, Query


class QueryForm(forms.ModelForm):
    """Adding a query from the query list."""

    class Meta:
        model = Query
        fields = ["text", "supercategory", "category", "iconic_group", "split"]
        # No maxlength: a browser cuts a longer pasted text to it without a word, and the cut query is saved. The
        # server refuses it instead, with the count (clean_text).
        widgets = {"text": forms.TextInput(attrs={"placeholder": "what the images should show", "size": 50})}
        error_messages = {"text": {"required": "Type the query: what the images should show."}}

    def clean_text(self) -> str:
        text = " ".join(self.cleaned_data["text"].split())
        if len(text) > MAX_QUERY_TEXT:
            raise forms.ValidationError(
                f"A query is at most {MAX_QUERY_TEXT:,} characters; this one has {len(text):,}. Say it shorter."
            )
        return text  # the same text as another query's: Query.clean says which
