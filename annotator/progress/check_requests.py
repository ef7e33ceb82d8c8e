"""What a completeness check is asked for: the target, the confidence, the frame and whether positives get a
second judgment, read from the API's JSON, the side pane's form or a command's options. Every refusal is a
BadCheck (annotator.progress.frames) with a sentence that says what to change."""

import math
from contextlib import suppress
from dataclasses import dataclass
from typing import Any

from annotator.models import CompletenessCheck
from annotator.progress.frames import BadCheck, FrameSpec, read_frame

TRUE = ("true", "1", "yes", "on")
# The `top` frame when none is given: a check counts two agreeing mistaken clicks as a positive, so the deeper the
# frame the less often it certifies (bench/RESULTS.md); the cost shown before drawing tells the rest.
DEFAULT_DEPTH = 1000


@dataclass(frozen=True)
class CheckRequest:
    target: float
    confidence: float
    frame: FrameSpec
    second_judgments: bool = True


def _share(data: dict[str, Any], name: str, default: float) -> float:
    value = data.get(name, default)
    if isinstance(value, str):
        with suppress(ValueError):
            value = float(value)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and 0 < value < 1):
        raise BadCheck(f'"{name}" must be a number between 0 and 1, both excluded (0.9 is 90%), not {value!r:.40}.')
    return float(value)


def read_request(data: Any) -> CheckRequest:
    """The check a request asks for: {"target_recall": 0.9, "confidence": 0.95, "frame": {...},
    "second_judgments": true}; BadCheck saying what to fix."""
    if not isinstance(data, dict):
        raise BadCheck(
            'Send a JSON object such as {"target_recall": 0.9, "confidence": 0.95, '
            '"frame": {"kind": "top", "depth": 5000}}.'
        )
    second = data.get("second_judgments", True)
    if isinstance(second, str):
        second = second.lower() in TRUE
    if not isinstance(second, bool):
        raise BadCheck('"second_judgments" must be true or false.')
    return CheckRequest(
        target=_share(data, "target_recall", 0.9),
        confidence=_share(data, "confidence", 0.95),
        frame=read_frame(data.get("frame", {"kind": "top", "depth": DEFAULT_DEPTH})),
        second_judgments=second,
    )


def read_form(form: Any) -> CheckRequest:
    """read_request for the side pane's form (a QueryDict: strings, taxa comma-separated, an unchecked box absent)."""
    depth: Any = form.get("depth", "").strip()
    if depth.isdigit():
        depth = int(depth)
    kind = form.get("kind", "")
    frame: dict[str, Any] = {"kind": kind, "depth": depth}
    if kind == CompletenessCheck.Frame.TAXA:
        frame["taxa"] = [name.strip() for name in form.get("taxa", "").split(",") if name.strip()]
    return read_request(
        {
            "target_recall": form.get("target_recall", ""),
            "confidence": form.get("confidence", ""),
            "frame": frame,
            "second_judgments": "second_judgments" in form,
        }
    )
