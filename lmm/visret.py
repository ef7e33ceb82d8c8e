"""Visualize-then-retrieve (the VisRet paper; see ../shared/docs/ANCHORS.md).

A text model rewrites the query as what it looks like (at most 30 words: appearance, posture, action), an
image generator draws it 3 times, each drawing is searched image-to-image, and the rankings are fused by
reciprocal rank fusion with k = 1."""

from .text import TextModel

REWRITE_PROMPT = (
    'Rewrite this search for wildlife photos as a description of what the photo looks like: "{query}". '
    "At most 30 words: the subject's appearance, posture and action, and the setting. No preamble."
)
MAX_WORDS = 30
IMAGES = 3
RRF_K = 1


def rewrite(text_model: TextModel, query: str) -> str:
    """The query as a picture description, cut to MAX_WORDS words. Raises ModelUnavailable."""
    words = text_model.complete(REWRITE_PROMPT.replace("{query}", query), max_tokens=80).split()
    return " ".join(words[:MAX_WORDS]).strip('"')
