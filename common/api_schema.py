"""What every API operation may answer besides its own answers, written into the OpenAPI schema once
(drf-spectacular's postprocessing hook): a client and a contract test then expect them."""

from typing import Any

COMMON = {
    "401": "The credentials sent are not valid (an unknown token, or Basic authentication, which the API refuses).",
    "429": "Too many requests: wait a minute, then try again (the Retry-After header says how long).",
}
NO_PAGE = "The cursor names no page: it is not one this API gave (follow the `next` link)."


def document_common_answers(result: dict[str, Any], generator: Any, request: Any, public: bool) -> dict[str, Any]:
    """Add 401 and 429 to every operation, and 404 to every operation paged by a cursor."""
    for path in result.get("paths", {}).values():
        for operation in path.values():
            responses = operation.setdefault("responses", {})
            for status, description in COMMON.items():
                responses.setdefault(status, {"description": description})
            if any(parameter.get("name") == "cursor" for parameter in operation.get("parameters", [])):
                responses.setdefault("404", {"description": NO_PAGE})
    return result
