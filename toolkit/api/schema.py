"""The schema's error responses: one ``Error`` component, documented on every operation.

Every operation may answer 400 (bad query or body), 401 (no credentials), 403, 404, 405,
406 (an ``Accept`` it cannot serve), 413 (body over the limit), 415 (a body it cannot parse,
for operations that take one), 429 (throttled) and 503 (the database or Redis away); each
with the body of ``toolkit.api.errors``. Added by a postprocessing hook so that no view can
forget them; an error response a view declares itself (a 409, say, with its own description
and examples) gets the same body.
"""

from __future__ import annotations

from typing import Any

__all__ = ["ERROR_SCHEMA", "document_errors"]

ERROR_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "Every error of the API.",
    "properties": {
        "error": {
            "type": "object",
            "properties": {
                "status": {"type": "integer", "description": "The HTTP status."},
                "code": {"type": "string", "description": "Stable, machine-readable."},
                "message": {"type": "string", "description": "A sentence for people."},
                "fields": {
                    "type": "object",
                    "additionalProperties": {},
                    "description": "Validation errors by input field.",
                },
                "details": {
                    "type": "object",
                    "additionalProperties": {},
                    "description": "More about the error, per code (quota_exceeded: the "
                    "usage, the limit and what would still fit).",
                },
            },
            "required": ["status", "code", "message"],
        }
    },
    "required": ["error"],
}

ERRORS = {
    "400": "The query or the body is invalid.",
    "401": "No valid credentials.",
    "403": "Not allowed.",
    "404": "Not found (or not visible to you).",
    "405": "Method not allowed.",
    "406": "No acceptable representation.",
    "413": "The body is larger than the limit.",
    "429": "Too many requests; see Retry-After.",
    "503": "The database or Redis is away for a moment (a restart); see Retry-After.",
}
BODY_ERRORS = {"415": "Unsupported media type of the body."}


def document_errors(result: dict[str, Any], generator: Any, request: Any, public: bool) -> Any:
    """drf-spectacular postprocessing hook: adds ``Error`` and the error responses."""
    components = result.setdefault("components", {})
    components.setdefault("schemas", {})["Error"] = ERROR_SCHEMA
    reference = {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}
    for operations in result.get("paths", {}).values():
        for operation in operations.values():
            if not isinstance(operation, dict) or "responses" not in operation:
                continue
            errors = {**ERRORS, **(BODY_ERRORS if "requestBody" in operation else {})}
            for status, description in errors.items():
                operation["responses"].setdefault(
                    status, {"description": description, "content": reference}
                )
            for status, response in operation["responses"].items():
                if str(status).startswith(("4", "5")):
                    _error_body(response)
    return result


def _error_body(response: dict[str, Any]) -> None:
    """A view's own error response (its description, its examples) gets the ``Error`` body:
    every error is in that format, whatever the view declared."""
    examples = (response.get("content") or {}).get("application/json", {}).get("examples")
    body: dict[str, Any] = {"schema": {"$ref": "#/components/schemas/Error"}}
    if examples:
        body["examples"] = examples
    response["content"] = {"application/json": body}
