"""What the emulator stores: one object version (`Entry`, serialized once), one event, one list
page, and the helpers that build them."""

from __future__ import annotations

import json
import time
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from .errors import ApiError
from .resources import Resource
from .selectors import Matcher

__all__ = ["Entry", "Event", "Key", "ListResult", "WatchClosed", "dumps", "now_rfc3339"]

Key = tuple[str, str]  # (namespace or "", name): the order the real server lists in


_OMITTED_WHEN_EMPTY = ("labels", "annotations", "finalizers", "ownerReferences")


def dumps(obj: Any) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


def now_rfc3339() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass(slots=True, frozen=True)
class Entry:
    """One version of one object: the dict (without apiVersion/kind) and its JSON bytes."""

    resource: Resource
    obj: dict[str, Any]
    raw: bytes
    rv: int

    @classmethod
    def build(cls, resource: Resource, obj: dict[str, Any], rv: int) -> Entry:
        meta = obj["metadata"]
        meta["resourceVersion"] = str(rv)
        for key in _OMITTED_WHEN_EMPTY:  # Go's `omitempty`: an empty map or list is not kept
            if key in meta and not meta[key]:
                del meta[key]
        return cls(resource, obj, dumps(obj), rv)

    @property
    def key(self) -> Key:
        meta = self.obj["metadata"]
        return meta.get("namespace", ""), meta["name"]

    def full(self) -> bytes:
        """The object as returned individually: with apiVersion and kind."""
        r = self.resource
        head = f'{{"apiVersion":"{r.api_version}","kind":"{r.kind}",'.encode()
        return head + self.raw[1:]

    def document(self) -> dict[str, Any]:
        return {"apiVersion": self.resource.api_version, "kind": self.resource.kind, **self.obj}


@dataclass(slots=True, frozen=True)
class Event:
    type: str  # ADDED | MODIFIED | DELETED
    entry: Entry
    prev: Entry | None  # the version before this event (None for ADDED)
    at: float = field(default_factory=time.monotonic)  # when it happened (compaction by age)


@dataclass(slots=True)
class ListResult:
    entries: list[Entry]
    rv: int
    continue_: str | None = None
    remaining: int | None = None


class WatchClosed(Exception):  # noqa: N818 - a signal, not an error
    """The store is shutting down (clean) or watches were closed abruptly (not clean)."""

    def __init__(self, *, clean: bool) -> None:
        super().__init__("clean" if clean else "abrupt")
        self.clean = clean


def matches(entry: Entry, namespace: str | None, matchers: Iterable[Matcher | None]) -> bool:
    if namespace is not None and entry.obj["metadata"].get("namespace") != namespace:
        return False
    return all(m(entry.obj) for m in matchers if m is not None)


def body_without_type(resource: Resource, body: Any, name_hint: str) -> dict[str, Any]:
    if not isinstance(body, dict):
        raise ApiError.invalid(resource.kind, name_hint, "the body must be a JSON object")
    api_version, kind = body.pop("apiVersion", None), body.pop("kind", None)
    if kind not in (None, resource.kind) or api_version not in (None, resource.api_version):
        raise ApiError.bad_request(
            f"the API version in the data ({api_version}) does not match the expected API "
            f"version ({resource.api_version}) or kind {kind} is not {resource.kind}"
        )
    metadata = body.setdefault("metadata", {})
    if not isinstance(metadata, dict):
        raise ApiError.invalid(resource.kind, name_hint, "metadata must be an object")
    return body


def without_times(obj: dict[str, Any]) -> dict[str, Any]:
    """The object with its managedFields' times left out (they alone make no write)."""
    managed = obj["metadata"].get("managedFields")
    if not managed:
        return obj
    fields = [{k: v for k, v in f.items() if k != "time"} for f in managed]
    return {**obj, "metadata": {**obj["metadata"], "managedFields": fields}}


def content(obj: dict[str, Any]) -> dict[str, Any]:
    """What `generation` tracks: everything except metadata and status."""
    return {k: v for k, v in obj.items() if k not in ("metadata", "status")}
