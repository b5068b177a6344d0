"""What can go wrong talking to the Kubernetes API, as exceptions (all `ClusterError`).

`NotFound`, `AlreadyExists`, `Conflict` (with `FieldManagerConflict`: server-side apply met
another manager's field), `Gone` (410: relist), `Unavailable` (429, 5xx: back off and retry)
with its kinds `Unreachable` (no answer at all: refused, reset, timed out; `TLSFailure`: no
trusted answer) and `ResourceVersionTooLarge` (the server has not reached the resourceVersion
asked for), `Invalid`, `Forbidden` (with `Unauthorized`: the credentials were refused).
"""

from __future__ import annotations

import json
from typing import Any

__all__ = [
    "AlreadyExists",
    "ClusterError",
    "Conflict",
    "FieldManagerConflict",
    "Forbidden",
    "Gone",
    "Invalid",
    "NotFound",
    "ResourceVersionTooLarge",
    "TLSFailure",
    "Unauthorized",
    "Unavailable",
    "Unreachable",
    "error_class",
    "error_for",
]


class ClusterError(Exception):
    """Any failure talking to the cluster; `status` is the Kubernetes Status body if any."""

    def __init__(
        self, message: str, *, code: int | None = None, status: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.message = message
        self.code = code
        self.status = status

    @property
    def reason(self) -> str:
        return str((self.status or {}).get("reason") or "")


class NotFound(ClusterError):
    """404: the object (or its namespace) does not exist."""


class AlreadyExists(ClusterError):
    """409 AlreadyExists on create."""


class Conflict(ClusterError):
    """409 Conflict: the object changed since the resourceVersion we sent."""


class FieldManagerConflict(Conflict):
    """409 on server-side apply: another field manager owns a field this apply changes. The
    message names the manager and the fields; apply again with ``force=True`` only where the
    portal is meant to own them."""

    @property
    def fields(self) -> list[str]:
        causes = ((self.status or {}).get("details") or {}).get("causes") or []
        return [
            str(c.get("field") or "")
            for c in causes
            if isinstance(c, dict) and c.get("reason") == "FieldManagerConflict"
        ]


class Gone(ClusterError):
    """410 Expired/Gone: the resourceVersion or continue token is too old; relist."""


class Unavailable(ClusterError):
    """The API server cannot be reached or is overloaded (refused, reset, timeout, 429, 5xx)."""


class Unreachable(Unavailable):
    """No HTTP answer: the connection was refused, reset or timed out (a restarting server)."""


class TLSFailure(Unreachable):
    """The TLS handshake failed: the server's certificate is not signed by the CA the
    configuration trusts (a control plane replaced with a new CA), or the server refused the
    client's certificate. Raised after the configuration was read again to no avail."""


class ResourceVersionTooLarge(Unavailable):
    """504 whose cause is `ResourceVersionTooLarge`: the server has not reached the
    resourceVersion asked for. Either it lags behind its peers, or the cluster's history
    restarted below what the client saw."""


class Invalid(ClusterError):
    """400/422: the request or object was rejected as malformed or invalid."""


class Forbidden(ClusterError):
    """401/403: the portal's credentials or RBAC do not allow this."""


class Unauthorized(Forbidden):
    """401: the server does not accept the credentials (an expired or rotated token, another
    cluster's). Raised after the configuration was read again to no avail."""


def error_for(code: int, body: bytes | str | None) -> ClusterError:
    status: dict[str, Any] | None = None
    text = body.decode("utf-8", "replace") if isinstance(body, bytes) else (body or "")
    try:
        parsed = json.loads(text) if text else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("kind") == "Status":
        status = parsed
        message = str(parsed.get("message") or parsed.get("reason") or f"HTTP {code}")
    else:
        message = text.strip()[:500] or f"HTTP {code}"
    return error_class(code, status)(message, code=code, status=status)


def error_class(code: int, status: dict[str, Any] | None) -> type[ClusterError]:
    if code == 404:
        return NotFound
    causes = ((status or {}).get("details") or {}).get("causes") or []
    if code == 409:
        if (status or {}).get("reason") == "AlreadyExists":
            return AlreadyExists
        if any(isinstance(c, dict) and c.get("reason") == "FieldManagerConflict" for c in causes):
            return FieldManagerConflict
        return Conflict
    if code == 410:
        return Gone
    if code == 504 and any(
        isinstance(c, dict) and c.get("reason") == "ResourceVersionTooLarge" for c in causes
    ):
        return ResourceVersionTooLarge
    if code == 429 or code >= 500:
        return Unavailable
    if code in (400, 422):
        return Invalid
    if code == 401:
        return Unauthorized
    if code == 403:
        return Forbidden
    return ClusterError
