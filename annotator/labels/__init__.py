"""The write room: every label write (judgments, final labels, their events), the final-label rule, the
tallies, what a viewer may see, and the one reader of label changes that clients send.

Its inner rule (tests/test_architecture.py): it imports nothing of annotator but its models and itself, so
every other room can build on it and none can go around it. This module is the room's door for the writes;
the other rooms import its modules (final, tallies, selectors, visibility, changes, sealed) by name.
"""

from annotator.labels.writes import (
    ADJUDICATE,
    ADJUDICATE_MESSAGE,
    LOCKED_MESSAGE,
    MANAGE_QUERIES,
    MAX_LEAD_TIME_MS,
    LabelChange,
    LabelRefused,
    NoDisagreement,
    Saved,
    adjudicate,
    check_writable,
    clear_label,
    clear_labels,
    finals_astray,
    judgments_settled,
    label_unlabeled,
    locked_for,
    locked_message,
    may_manage,
    set_label,
    set_labels,
    set_labels_in_bulk,
    settle_again,
)

__all__ = [
    "ADJUDICATE",
    "ADJUDICATE_MESSAGE",
    "LOCKED_MESSAGE",
    "MANAGE_QUERIES",
    "MAX_LEAD_TIME_MS",
    "LabelChange",
    "LabelRefused",
    "NoDisagreement",
    "Saved",
    "adjudicate",
    "check_writable",
    "clear_label",
    "clear_labels",
    "finals_astray",
    "judgments_settled",
    "label_unlabeled",
    "locked_for",
    "locked_message",
    "may_manage",
    "set_label",
    "set_labels",
    "set_labels_in_bulk",
    "settle_again",
]
