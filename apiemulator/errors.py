"""Kubernetes `Status` errors raised by the store and rendered by the server."""

from __future__ import annotations

from typing import Any

__all__ = ["ApiError", "status_body"]


def status_body(
    code: int, reason: str, message: str, details: dict[str, Any] | None = None
) -> dict[str, Any]:
    body: dict[str, Any] = {
        "kind": "Status",
        "apiVersion": "v1",
        "metadata": {},
        "status": "Success" if code < 400 else "Failure",
        "message": message,
        "reason": reason,
        "code": code,
    }
    if details:
        body["details"] = details
    if code < 400:
        del body["message"], body["reason"]
    return body


class ApiError(Exception):
    """An API failure with its HTTP code and Kubernetes reason (NotFound, Conflict, ...)."""

    def __init__(
        self, code: int, reason: str, message: str, details: dict[str, Any] | None = None
    ) -> None:
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details

    def status(self) -> dict[str, Any]:
        return status_body(self.code, self.reason, self.message, self.details)

    @classmethod
    def not_found(cls, resource: str, group: str, name: str) -> ApiError:
        qualified = f"{resource}.{group}" if group else resource
        return cls(
            404,
            "NotFound",
            f'{qualified} "{name}" not found',
            {"name": name, "group": group, "kind": resource},
        )

    @classmethod
    def already_exists(cls, resource: str, group: str, name: str) -> ApiError:
        qualified = f"{resource}.{group}" if group else resource
        return cls(
            409,
            "AlreadyExists",
            f'{qualified} "{name}" already exists',
            {"name": name, "group": group, "kind": resource},
        )

    @classmethod
    def conflict(cls, resource: str, group: str, name: str, why: str = "") -> ApiError:
        qualified = f"{resource}.{group}" if group else resource
        why = why or (
            "the object has been modified; please apply your changes to the latest version "
            "and try again"
        )
        return cls(
            409,
            "Conflict",
            f'Operation cannot be fulfilled on {qualified} "{name}": {why}',
            {"name": name, "group": group, "kind": resource},
        )

    @classmethod
    def invalid(cls, kind: str, name: str, message: str) -> ApiError:
        return cls(
            422, "Invalid", f'{kind} "{name}" is invalid: {message}', {"name": name, "kind": kind}
        )

    @classmethod
    def bad_request(cls, message: str) -> ApiError:
        return cls(400, "BadRequest", message)

    @classmethod
    def expired(cls, message: str) -> ApiError:
        return cls(410, "Expired", message)

    @classmethod
    def resource_version_too_large(cls, requested: int, current: int) -> ApiError:
        """What kube-apiserver answers a list from a resourceVersion it has not reached yet
        (after waiting for it a few seconds): a 504 whose cause says why."""
        return cls(
            504,
            "Timeout",
            f"Timeout: Too large resource version: {requested}, current: {current}",
            {
                "causes": [
                    {"reason": "ResourceVersionTooLarge", "message": "Too large resource version"}
                ],
                "retryAfterSeconds": 1,
            },
        )
