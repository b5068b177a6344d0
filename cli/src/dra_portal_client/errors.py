"""The errors of the client: one class per kind of answer a script handles differently, each
carrying the API's error body (``{"error": {"status", "code", "message", "fields",
"details"}}``)."""

from __future__ import annotations

from typing import Any

__all__ = [
    "ApiError",
    "AuthenticationFailed",
    "BadRequest",
    "Conflict",
    "ConnectionFailed",
    "NotFound",
    "PermissionDenied",
    "PortalError",
    "Unavailable",
]


class PortalError(Exception):
    """Anything the client cannot do; ``str()`` is one line for people."""


class ConnectionFailed(PortalError):
    """No answer from the server (a wrong URL, DNS, TLS, a timeout) or an answer that is not
    the portal's API."""


class ApiError(PortalError):
    """The portal answered with an error."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        fields: dict[str, Any] | None = None,
        details: dict[str, Any] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.fields = fields or {}
        self.details = details or {}

    def field_lines(self) -> list[str]:
        """The validation errors, one ``field: message`` line each (nested fields dotted)."""
        lines: list[str] = []

        def walk(prefix: str, value: Any) -> None:
            if isinstance(value, dict):
                for key, inner in value.items():
                    walk(f"{prefix}.{key}" if prefix else str(key), inner)
            elif isinstance(value, list) and all(isinstance(item, str) for item in value):
                for item in value:
                    lines.append(f"{prefix}: {item}" if prefix else item)
            elif isinstance(value, list):
                for index, item in enumerate(value):
                    walk(f"{prefix}[{index}]", item)
            else:
                lines.append(f"{prefix}: {value}")

        walk("", self.fields)
        return lines


class BadRequest(ApiError):
    """400: the input is wrong (``fields`` says where)."""


class AuthenticationFailed(ApiError):
    """401: no token, a wrong one, a revoked or an expired one."""


class PermissionDenied(ApiError):
    """403: signed in, but not allowed to do this."""


class NotFound(ApiError):
    """404: nothing there, or nothing you may see."""


class Conflict(ApiError):
    """409: the state forbids it (``quota_exceeded`` carries the usage in ``details``)."""


class Unavailable(ApiError):
    """429 or 503 still, after the retries ``Retry-After`` asked for."""


ERRORS_BY_STATUS: dict[int, type[ApiError]] = {
    400: BadRequest,
    401: AuthenticationFailed,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    422: BadRequest,
    429: Unavailable,
    503: Unavailable,
}
