"""The JSON bodies that draw a completeness check, as OpenAPI schemas: what annotator.completeness.check_requests reads,
field by field, so that every body the schema allows is one the server takes (a draw, or a 409 the project's state
gives) and every body it refuses with a 400 is one the schema says no to. Unknown fields are ignored, as the reader
ignores them. tests/security/test_schemathesis.py holds the two to each other."""

from typing import Any

from annotator.completeness import check_requests, frames
from annotator.models import CompletenessCheck, Query
from common.api_params import BIGINT

KIND = CompletenessCheck.Frame

SHARE: dict[str, Any] = {
    "type": "number",
    "minimum": check_requests.SMALLEST,  # read to six decimals: 1e-300 would be 0
    "maximum": 1 - check_requests.SMALLEST,
}
FLAG: dict[str, Any] = {"type": "boolean"}
FRAME: dict[str, Any] = {
    "oneOf": [
        {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": [KIND.TOP.value, KIND.REVIEWED.value]},
                "depth": {"type": "integer", "minimum": 1, "maximum": frames.MAX_DEPTH},
            },
            "required": ["kind", "depth"],
        },
        {
            "type": "object",
            "properties": {
                "kind": {"type": "string", "enum": [KIND.TAXA.value]},
                "taxa": {
                    "type": "array",
                    "minItems": 1,
                    "maxItems": frames.MAX_TAXA,
                    "items": {"type": "string", "pattern": r"\S"},  # a name or an id; blank names are refused
                },
            },
            "required": ["kind", "taxa"],
        },
        {
            "type": "object",
            "properties": {"kind": {"type": "string", "enum": [KIND.COLLECTION.value]}},
            "required": ["kind"],
        },
    ],
    "description": 'The frame the claim is over: {"kind": "top", "depth": 5000}, {"kind": "taxa", "taxa": ["Aves"]} '
    'or {"kind": "collection"}; absent, the query\'s own (frozen at its first draw).',
}
COMMON: dict[str, Any] = {
    "target_recall": {**SHARE, "description": "the recall the claim is for, 0.9 for 90%"},
    "confidence": {**SHARE, "description": "the claim's confidence, 0.95 for 95%"},
    "dry_run": {**FLAG, "description": "answer what the draw would cost, and draw nothing"},
    "with_unconfirmed": {**FLAG, "description": "draw although positives of the frame wait for confirmation"},
}
QUERY_CHECK: dict[str, Any] = {
    "type": "object",
    "properties": {
        **COMMON,
        "frame": FRAME,
        "second_judgments": {**FLAG, "description": "a blind second look and an adjudicator (default true)"},
    },
}
BENCHMARK_CHECK: dict[str, Any] = {
    "type": "object",
    "properties": {
        **COMMON,
        "queries": {
            "type": "array",
            "minItems": 1,
            "maxItems": check_requests.MAX_QUERIES,
            "items": {"type": "integer", "minimum": 1, "maximum": BIGINT - 1},
            "description": "the queries the claim is over (default: every query)",
        },
        "split": {"type": "string", "enum": [str(value) for value in Query.Split.values]},
    },
    "not": {"required": ["queries", "split"]},  # one or the other
}
