"""One error format for the whole API.

Every error response is ``{"error": {"status", "code", "message", "fields"?}}``: ``code`` is a
stable machine-readable string, ``message`` a sentence for people, ``fields`` maps input field
names to their problems for validation errors, and ``details`` (an object) carries what an
error's code promises beyond the sentence, e.g. a quota's usage, limit and room for
``quota_exceeded``: an exception with a ``details`` dict attribute gets it rendered.
"""

from __future__ import annotations

from typing import Any

from django.core.exceptions import PermissionDenied
from django.core.exceptions import ValidationError as DjangoValidationError
from django.http import Http404
from rest_framework import exceptions
from rest_framework.response import Response
from rest_framework.views import exception_handler as drf_exception_handler

__all__ = ["Conflict", "exception_handler"]


class Conflict(exceptions.APIException):
    """409 ``conflict``: the request is allowed, but the state of what it names refuses it
    (a claim request that has ended, a tenant that still has claim requests)."""

    status_code = 409
    default_code = "conflict"


def _first_message(detail: Any) -> str:
    if isinstance(detail, list) and detail:
        return _first_message(detail[0])
    if isinstance(detail, dict) and detail:
        key, value = next(iter(detail.items()))
        message = _first_message(value)
        return message if key in ("non_field_errors", "__all__") else f"{key}: {message}"
    return str(detail)


def exception_handler(exc: Exception, context: dict[str, Any]) -> Response | None:
    if isinstance(exc, DjangoValidationError):
        exc = exceptions.ValidationError(
            exc.message_dict if hasattr(exc, "error_dict") else {"non_field_errors": exc.messages}
        )
    response = drf_exception_handler(exc, context)
    if response is None:
        return None
    if isinstance(exc, Http404):
        code, message = "not_found", "Not found."
    elif isinstance(exc, PermissionDenied):
        code, message = "permission_denied", "You do not have permission to do this."
    elif isinstance(exc, exceptions.APIException):
        codes = exc.get_codes()
        code = codes if isinstance(codes, str) else "invalid"
        message = _first_message(exc.detail)
    else:  # pragma: no cover - DRF only handles the exceptions above
        code, message = "error", str(exc)
    body: dict[str, Any] = {"status": response.status_code, "code": code, "message": message}
    if isinstance(exc, exceptions.ValidationError) and isinstance(exc.detail, dict):
        body["fields"] = exc.detail
    details = getattr(exc, "details", None)
    if isinstance(details, dict):
        body["details"] = details
    response.data = {"error": body}
    return response
