"""The OpenAPI schemas of a check's draw (annotator.api.check_schemas) say what the reader takes
(annotator.completeness.check_requests): a body the schema allows is read, a body the reader refuses with a 400 is
one the schema says no to. tests/security/test_schemathesis.py then fuzzes the endpoints from these schemas."""

import jsonschema
import pytest

from annotator.api.check_schemas import BENCHMARK_CHECK, QUERY_CHECK
from annotator.completeness.check_requests import BENCHMARK, QUERY, read_request
from annotator.completeness.frames import BadCheck

READ = [
    (QUERY, {}),
    (QUERY, {"target_recall": 0.9, "confidence": 0.95, "frame": {"kind": "top", "depth": 5000}}),
    (QUERY, {"frame": {"kind": "reviewed", "depth": 1}, "second_judgments": False, "dry_run": True}),
    (QUERY, {"frame": {"kind": "taxa", "taxa": ["Aves", " 3 "]}, "with_unconfirmed": True}),
    (QUERY, {"frame": {"kind": "collection"}, "anything else": [1, {"x": None}]}),  # unknown fields: ignored
    (BENCHMARK, {"target_recall": 0.000001, "confidence": 0.999999, "queries": [1, 2, 2**63 - 1]}),
    (BENCHMARK, {"split": "val", "frame": "ignored here"}),
]
REFUSED = [
    (QUERY, {"target_recall": 0}),
    (QUERY, {"target_recall": 1}),
    (QUERY, {"target_recall": "0.9"}),
    (QUERY, {"target_recall": True}),
    (QUERY, {"target_recall": 1e-300}),
    (QUERY, {"confidence": [""]}),  # what the fuzzer once sent the benchmark's draw through a free-form schema
    (QUERY, {"frame": {"kind": "everything"}}),
    (QUERY, {"frame": {"kind": "top", "depth": 0}}),
    (QUERY, {"frame": {"kind": "top", "depth": 2**70}}),
    (QUERY, {"frame": {"kind": "top", "depth": "5000"}}),
    (QUERY, {"frame": {"kind": "top"}}),
    (QUERY, {"frame": "top"}),
    (QUERY, {"frame": {}}),
    (QUERY, {"frame": {"kind": "taxa", "taxa": []}}),
    (QUERY, {"frame": {"kind": "taxa", "taxa": ["  "]}}),
    (QUERY, {"second_judgments": "true"}),
    (QUERY, {"dry_run": "true"}),
    (QUERY, [1, 2]),
    (BENCHMARK, {"confidence": [""], "b64_json": [False]}),
    (BENCHMARK, {"queries": []}),
    (BENCHMARK, {"queries": [0]}),
    (BENCHMARK, {"queries": ["1"]}),
    (BENCHMARK, {"queries": [1], "split": "val"}),
    (BENCHMARK, {"split": "everything"}),
    (BENCHMARK, {"with_unconfirmed": 1}),
]
SCHEMA = {QUERY: QUERY_CHECK, BENCHMARK: BENCHMARK_CHECK}


@pytest.mark.django_db
@pytest.mark.parametrize(("claim", "body"), READ)
def test_a_body_the_schema_allows_is_read(claim, body):
    jsonschema.validate(body, SCHEMA[claim])
    read_request(body, claim)  # no BadCheck


@pytest.mark.django_db
@pytest.mark.parametrize(("claim", "body"), REFUSED)
def test_a_body_the_reader_refuses_the_schema_refuses(claim, body):
    with pytest.raises(BadCheck):
        read_request(body, claim)
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(body, SCHEMA[claim])
