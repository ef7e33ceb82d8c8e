"""The evaluation app's upload form: a run, its ground truth and the protocol, checked before anything is stored."""

import uuid
from typing import Any

from django import forms

from .metrics import NORMALISERS, TIES

MAX_UPLOAD_BYTES = 200 * 1024 * 1024  # a 5M-line run is about 150 MB
MAX_FILE_NAME_BYTES = 255


class EvaluateForm(forms.Form):
    # One per form shown: the same upload sent twice (a double click, a retried POST) is scored once.
    submission = forms.UUIDField(widget=forms.HiddenInput, required=False, initial=uuid.uuid4)
    name = forms.CharField(max_length=200, help_text="What this run is, e.g. “ViT-H/14 zero-shot”.")
    run = forms.FileField(help_text="TREC, CSV (query_id,image_id,score) or INQUIRE-Rerank layout.")
    qrels = forms.FileField(
        required=False, help_text="INQUIRE annotations or Quire labels CSV. Empty: the labels in Quire."
    )
    queries = forms.FileField(required=False, help_text="INQUIRE queries CSV (groups the tables by its columns).")
    release = forms.ChoiceField(
        required=False,
        help_text="Score against a release's labels and queries (manage.py release): the report names it.",
    )
    protocol = forms.ChoiceField(choices=[("fullrank", "full-rank"), ("rerank", "rerank (fixed candidates)")])
    k = forms.IntegerField(
        min_value=1,
        max_value=10_000,
        required=False,
        help_text="Empty: 50 for full-rank, every candidate for rerank (as INQUIRE scores it).",
    )
    normaliser = forms.ChoiceField(choices=[("", "the protocol's")] + [(n, n) for n in NORMALISERS], required=False)
    ties = forms.ChoiceField(
        choices=[(t, t) for t in TIES],
        initial="average",
        required=False,
        help_text="average: tied scores as scikit-learn (INQUIRE's numbers); run-order: the file's order.",
    )

    def __init__(self, *args: Any, releases: list[str] | None = None, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = [("", "the labels in Quire now")] + [(name, f"release {name}") for name in releases or []]
        self.fields["release"].choices = choices  # type: ignore[attr-defined]

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        if data.get("release") and data.get("qrels"):
            self.add_error("release", "Score against a release or an uploaded qrels file, not both.")
        for name in ("run", "qrels", "queries"):
            upload = data.get(name)
            if upload and upload.size > MAX_UPLOAD_BYTES:
                self.add_error(
                    name, f"{upload.name} is {upload.size / 2**20:.0f} MB; the limit is {MAX_UPLOAD_BYTES // 2**20} MB."
                )
            elif upload and len(str(upload.name).encode()) > MAX_FILE_NAME_BYTES:
                # The readers name the file in their messages through a link bearing its name, and a file
                # system takes 255 bytes a name (260 "é" are 520).
                self.add_error(
                    name,
                    f"The file's name is {len(str(upload.name).encode())} bytes long; the limit is "
                    f"{MAX_FILE_NAME_BYTES}: rename the file and upload it again.",
                )
        return data
