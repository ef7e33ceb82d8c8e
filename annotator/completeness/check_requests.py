"""What a completeness check is asked for: the target, the confidence, the frame and whether positives get a
second judgment, read from the API's JSON, the side pane's form or a command's options. Every refusal is a
BadCheck (annotator.completeness.frames) with a sentence that says what to change."""

import math
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from annotator.completeness.frames import BadCheck, FrameSpec, read_frame
from annotator.models import CompletenessCheck

# The depth the side pane's form and the command offer for a declared `top` frame (a check without a frame uses the
# query's own: annotator.completeness.frames.frame_of).
DEFAULT_DEPTH = 1000
# What the test assumes of a look (annotator.completeness.certify): only looks given after the draw count, each sampled
# pair gets LOOKS of them, and each misses a true positive with probability at most the team's per-look bound
# (annotator.completeness.looks: an upper confidence bound from its own blind looks at confirmed positives), PER_LOOK
# until ENOUGH_LOOKS such looks are counted. The adjudicator, who decides every pair a look called relevant or
# unsure, is taken to reject at most ADJUDICATOR of the true positives. Declared in every claim.
PER_LOOK = 0.05
ENOUGH_LOOKS = 100
LOOK_BOUND_CONFIDENCE = 0.95
ADJUDICATOR = 0.0025
LOOKS = 1
# The rate the older two-look checks were tested at (kept for their claims' words, and the simulator's comparison).
MISS_RATE = 0.005
# With second judgments off (a team of one), each sampled image has one look and no adjudicator.
ONE_LOOK_MISS_RATE = PER_LOOK
SMALLEST = 1e-6


@dataclass(frozen=True)
class CheckRequest:
    target: float
    confidence: float
    frame: FrameSpec | None  # None: the query's frame (frozen, or its default)
    second_judgments: bool = True
    with_unconfirmed: bool = False  # draw although frame positives wait for confirmation (they are sampled then)
    dry_run: bool = False  # answer what the draw would cost, and draw nothing


def read_share(data: dict[str, Any], name: str, default: float) -> float:
    """A share in a JSON body (the per-query check's and the benchmark's alike): a number, never text such as
    "0.9" (the schema says number); BadCheck saying what to fix."""
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and 0 < value < 1):
        raise BadCheck(f'"{name}" must be a number between 0 and 1, both excluded (0.9 is 90%), not {value!r:.40}.')
    if not SMALLEST <= value <= 1 - SMALLEST:  # read to six decimals: 1e-300 would be 0
        raise BadCheck(f'"{name}" must be between {SMALLEST} and {1 - SMALLEST}, not {value!r:.40}.')
    return float(value)


def read_request(data: Any) -> CheckRequest:
    """The check a request asks for: {"target_recall": 0.9, "confidence": 0.95, "frame": {...},
    "second_judgments": true}; BadCheck saying what to fix."""
    if not isinstance(data, dict):
        raise BadCheck(
            'Send a JSON object such as {"target_recall": 0.9, "confidence": 0.95, '
            '"frame": {"kind": "top", "depth": 5000}}.'
        )
    frame = data.get("frame")
    return CheckRequest(
        target=read_share(data, "target_recall", 0.9),
        confidence=read_share(data, "confidence", 0.95),
        frame=None if frame is None else read_frame(frame),
        second_judgments=read_flag(data, "second_judgments", True),
        with_unconfirmed=read_flag(data, "with_unconfirmed", False),
        dry_run=read_flag(data, "dry_run", False),
    )


def read_flag(data: Any, name: str, default: bool) -> bool:
    """A JSON boolean: a string such as "true" or "maybe" is refused, naming the field (it once drew a real check
    for a dry run, and turned second looks off). `data` that is no object has no flags: the default."""
    value = data.get(name, default) if isinstance(data, dict) else default
    if not isinstance(value, bool):
        raise BadCheck(f'"{name}" must be true or false (a JSON boolean, not {value!r:.40}).')
    return value


def read_form(form: Any) -> CheckRequest:
    """read_request for the side pane's form (a QueryDict: strings, taxa comma-separated, an unchecked box absent)."""
    depth: Any = form.get("depth", "").strip()
    if depth.isascii() and depth.isdigit():  # "²" is a digit to str.isdigit, not to int()
        depth = int(depth)
    kind = form.get("kind", "")
    frame: dict[str, Any] = {"kind": kind, "depth": depth}
    if kind == CompletenessCheck.Frame.TAXA:
        frame["taxa"] = [name.strip() for name in form.get("taxa", "").split(",") if name.strip()]
    return read_request(
        {
            "target_recall": _number(form.get("target_recall", "")),
            "confidence": _number(form.get("confidence", "")),
            "frame": frame if kind else None,  # "the query's frame" in the form: no kind
            "second_judgments": "second_judgments" in form,
            "with_unconfirmed": "with_unconfirmed" in form,
        }
    )


def _number(text: str) -> float | str:
    """A form's field as a number where it reads as one, else as it came (read_share then says what to fix)."""
    with suppress(ValueError):
        return float(text)
    return text
