"""A typed Python client for the DRA Portal REST API; the ``dra-portal`` CLI is built on it."""

from dra_portal_client.client import PortalClient
from dra_portal_client.errors import (
    ApiError,
    AuthenticationFailed,
    BadRequest,
    Conflict,
    ConnectionFailed,
    NotFound,
    PermissionDenied,
    PortalError,
    Unavailable,
)

__all__ = [
    "ApiError",
    "AuthenticationFailed",
    "BadRequest",
    "Conflict",
    "ConnectionFailed",
    "NotFound",
    "PermissionDenied",
    "PortalClient",
    "PortalError",
    "Unavailable",
]
