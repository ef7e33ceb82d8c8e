"""Every answer a vision-language model gave, so that asking again costs nothing."""

import hashlib

from django.db import models
from django.utils import timezone


def prompt_key(prompt: str) -> str:
    return hashlib.sha256(prompt.encode("utf-8")).hexdigest()


class Answer(models.Model):
    """P(yes) from `model` for a rendered prompt and an image's bytes (keyed by content, not by id: the
    same file under two ids, or a re-imported collection, is not asked twice)."""

    model = models.CharField(max_length=200)
    prompt_sha256 = models.CharField(max_length=64)
    image_sha256 = models.CharField(max_length=64)
    prompt = models.TextField(help_text="The rendered prompt, for reading back.")
    score = models.FloatField(help_text="p(Yes) / (p(Yes) + p(No)), INQUIRE's rule.")
    p_yes = models.FloatField()
    p_no = models.FloatField()
    created_at = models.DateTimeField(default=timezone.now)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["model", "prompt_sha256", "image_sha256"], name="lmm_answer_once")
        ]

    def __str__(self) -> str:
        return f"{self.model}: {self.score:.3f}"
