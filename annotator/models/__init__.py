"""The queries, and the labels annotators give them, with a history nothing can erase.

Sizes to design for: INQUIRE has 250 queries and ~150k labels over 5M images, and a
labeling project may reach millions of labels.

A team labels: each annotator's label of an image is their Judgment; the Label is the benchmark's
final label, derived from the judgments (annotator.labels.final) or decided by an adjudicator. Exports and
evaluation read Label; agreement reads Judgment.

Provenance rules, enforced here rather than trusted to callers:
- a Judgment or Label changes only inside annotator.labels (`recording_label_changes`), which writes
  the LabelEvent in the same transaction; any other save, update or delete of either raises;
- a LabelEvent is never updated or deleted, and what it refers to (query, image, user,
  import) cannot be deleted while it exists (PROTECT): the history always explains the
  labels.

The models live in one module per room (queries, labels, methods, team, completeness, releases), in the order
they build on each other; the rest of the project imports them from here.
"""

from annotator.models.completeness import (
    CheckImage,
    CheckStratum,
    CompletenessCheck,
    QueryFrame,
    pack_ids,
    unpack_ids,
)
from annotator.models.labels import (
    FINAL_VALUES,
    UNDECIDED,
    Decision,
    ImportBatch,
    Judgment,
    Label,
    LabelEvent,
    LabelEventQuerySet,
    LabelSource,
    LabelValue,
    QueryAnnotator,
    QueryTally,
    RecordedQuerySet,
    recording_label_changes,
)
from annotator.models.methods import (
    GeneratedImage,
    PreLabel,
    RerankJob,
    RerankScore,
)
from annotator.models.queries import (
    MAX_QUERY_TEXT,
    FinalRule,
    Query,
    QueryExample,
    duplicate_text_message,
    normalised_text,
    text_key,
)
from annotator.models.releases import (
    Release,
    ReleaseJob,
)
from annotator.models.team import (
    Assignment,
    BlindVote,
    OverlapImage,
)

__all__ = [
    "Assignment",
    "BlindVote",
    "CheckImage",
    "CheckStratum",
    "CompletenessCheck",
    "Decision",
    "FINAL_VALUES",
    "FinalRule",
    "GeneratedImage",
    "ImportBatch",
    "Judgment",
    "Label",
    "LabelEvent",
    "LabelEventQuerySet",
    "LabelSource",
    "LabelValue",
    "MAX_QUERY_TEXT",
    "OverlapImage",
    "PreLabel",
    "Query",
    "QueryAnnotator",
    "QueryExample",
    "QueryFrame",
    "QueryTally",
    "RecordedQuerySet",
    "Release",
    "ReleaseJob",
    "RerankJob",
    "RerankScore",
    "UNDECIDED",
    "duplicate_text_message",
    "normalised_text",
    "pack_ids",
    "recording_label_changes",
    "text_key",
    "unpack_ids",
]
