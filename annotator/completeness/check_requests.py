"""What a completeness check is asked for, a query's or the benchmark's, read by one reader from the API's JSON, the
side pane's form, the dashboard's or a command's options: the target and the confidence; for a query's check its
frame and whether positives get a second judgment; for the benchmark's, which queries (all, a split or a list).
Every refusal is a BadCheck (annotator.completeness.frames) with a sentence that says what to change."""

import math
from contextlib import suppress
from dataclasses import dataclass, replace
from typing import Any

from annotator.completeness.frames import BadCheck, FrameSpec, read_frame
from annotator.models import CompletenessCheck, Query

QUERY, BENCHMARK = CompletenessCheck.Claim.QUERY, CompletenessCheck.Claim.BENCHMARK
MAX_QUERIES = 2000

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


DEFAULT_TARGET, DEFAULT_CONFIDENCE = 0.9, 0.95  # a draw's when its request names none (and the advice's)
# The targets and confidences the side pane's form offers (the API takes any share).
TARGETS, CONFIDENCES = (0.8, 0.9, 0.95), (0.9, 0.95, 0.99)


@dataclass(frozen=True)
class CheckRequest:
    target: float
    confidence: float
    frame: FrameSpec | None = None  # a query's check: None, the query's frame (frozen, or its default)
    second_judgments: bool = True
    with_unconfirmed: bool = False  # draw although frame positives wait for confirmation (they are sampled then)
    dry_run: bool = False  # answer what the draw would cost, and draw nothing
    query_ids: tuple[int, ...] | None = None  # the benchmark's: None, every query (or the split's)
    split: str | None = None

    @property
    def scope(self) -> str:
        """The benchmark check's queries, in words."""
        if self.query_ids is not None:
            return "queries " + ", ".join(map(str, self.query_ids))
        return f"the {self.split} split" if self.split else "every query"


def read_share(data: dict[str, Any], name: str, default: float) -> float:
    """A share in a JSON body (the per-query check's and the benchmark's alike): a number, never text such as
    "0.9" (the schema says number); BadCheck saying what to fix."""
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not (math.isfinite(value) and 0 < value < 1):
        raise BadCheck(f'"{name}" must be a number between 0 and 1, both excluded (0.9 is 90%), not {value!r:.40}.')
    if not SMALLEST <= value <= 1 - SMALLEST:  # read to six decimals: 1e-300 would be 0
        raise BadCheck(f'"{name}" must be between {SMALLEST} and {1 - SMALLEST}, not {value!r:.40}.')
    return float(value)


def read_request(data: Any, claim: str = QUERY) -> CheckRequest:
    """The check a request asks for, a query's: {"target_recall": 0.9, "confidence": 0.95, "frame": {...},
    "second_judgments": true}; the benchmark's: {"target_recall": 0.9, "confidence": 0.95, "queries": [ids] |
    "split": "val"}; both: "with_unconfirmed", "dry_run". BadCheck saying what to fix."""
    if not isinstance(data, dict):
        example = '"frame": {"kind": "top", "depth": 5000}' if claim == QUERY else '"split": "val"'
        raise BadCheck(f'Send a JSON object such as {{"target_recall": 0.9, "confidence": 0.95, {example}}}.')
    asked = CheckRequest(
        target=read_share(data, "target_recall", DEFAULT_TARGET),
        confidence=read_share(data, "confidence", DEFAULT_CONFIDENCE),
        with_unconfirmed=read_flag(data, "with_unconfirmed", False),
        dry_run=read_flag(data, "dry_run", False),
    )
    if claim == QUERY:
        frame = data.get("frame")
        return replace(
            asked,
            frame=None if frame is None else read_frame(frame),
            second_judgments=read_flag(data, "second_judgments", True),
        )
    queries, split = data.get("queries"), data.get("split")
    if queries is not None and split is not None:
        raise BadCheck('Name the queries by "queries" or by "split", not both.')
    return replace(
        asked,
        query_ids=None if queries is None else _read_query_ids(queries),
        split=None if split is None else _read_split(split),
    )


def _read_query_ids(queries: Any) -> tuple[int, ...]:
    if not isinstance(queries, list) or not queries or len(queries) > MAX_QUERIES:
        raise BadCheck(f'"queries" must be a list of 1 to {MAX_QUERIES:,} query ids.')
    if not all(isinstance(i, int) and not isinstance(i, bool) and 0 < i < 2**63 for i in queries):
        raise BadCheck('Each of "queries" must be a query id, a whole number such as 12.')
    return tuple(sorted(set(queries)))


def _read_split(split: Any) -> str:
    splits = tuple(Query.Split.values)
    if split not in splits:
        raise BadCheck(f'"split" must be one of {", ".join(splits)}, not {split!r:.40}.')
    return str(split)


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
