"""The `Accept` header of a resource request, and the shapes kube-apiserver answers in besides the
object itself: a `meta.k8s.io` `Table` (what `kubectl get` asks for) and `PartialObjectMetadata`.

Negotiation follows ``k8s.io/apiserver/pkg/endpoints/handlers/negotiation``: the clauses are
tried best first (by ``q``, then specificity); a clause asking for a conversion (``as``, ``g``,
``v``) is taken only if the server can make it (``Table`` in JSON, ``PartialObjectMetadata`` and
``...List``, all in ``meta.k8s.io/v1`` or ``v1beta1``); when no clause is taken the answer is 406.
The emulator speaks JSON only, so clauses for YAML, protobuf or CBOR are never taken.

The conversion itself is ``handlers/response.go``'s ``doTransformObject`` and ``asTable``: a
``Status`` passes through unchanged; a Table row carries the object as asked by
``includeObject`` (``Metadata`` by default: a ``PartialObjectMetadata``; ``Object``: the whole
object; ``None``: nothing), validated only once the request has been carried out, as the real
server does.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from .errors import ApiError
from .printers import PRINTERS
from .resources import Resource

__all__ = ["Conversion", "convert_list", "convert_object", "include_object", "negotiate"]

_META_GROUP = "meta.k8s.io"
_META_VERSIONS = ("v1", "v1beta1")
_SERVED = ("application", "json")
_INCLUDE_OBJECT = ("", "None", "Object", "Metadata")


@dataclass(frozen=True)
class Conversion:
    """What the client asked the answer to be converted to: ``kind`` in
    ``meta.k8s.io/<version>``."""

    kind: str
    version: str

    @property
    def api_version(self) -> str:
        return f"{_META_GROUP}/{self.version}"


def _clauses(header: str) -> list[tuple[str, str, dict[str, str]]]:
    """``goautoneg.ParseAccept``: (type, subtype, parameters), best first."""
    parsed: list[tuple[float, int, str, str, dict[str, str]]] = []
    for position, part in enumerate(header.split(",")):
        media, *raw_params = part.strip(" ").split(";")
        kind, _, subtype = media.partition("/")
        kind, subtype = kind.strip(" "), subtype.strip(" ")
        if not subtype:
            if kind != "*":
                continue
            subtype = "*"
        elif "/" in subtype:
            continue
        q, params = 1.0, {}
        for raw in raw_params:
            key, sep, value = raw.partition("=")
            if not sep or "=" in value:
                continue
            key = key.strip(" ")
            if key == "q":
                try:
                    q = float(value)
                except ValueError:
                    q = 0.0
            else:
                params[key] = value.strip(" ")
        parsed.append((q, position, kind, subtype, params))
    parsed.sort(key=lambda c: (-c[0], c[2] == "*", c[3] == "*", c[1]))
    return [(kind, subtype, params) for _, _, kind, subtype, params in parsed]


def negotiate(
    header: str | None, *, watch: bool = False, convertible: bool = True
) -> Conversion | None:
    """The conversion the best acceptable clause of `header` asks for (None: the object as
    stored), or 406 when the emulator can answer none of them. Discovery documents are not
    `convertible`: there a clause asking for a conversion is never taken."""
    if not header:
        return None
    for kind, subtype, params in _clauses(header):
        if (kind, subtype) not in (_SERVED, ("application", "*"), ("*", "*")):
            continue
        if params.get("stream") and params["stream"] != "watch":
            continue
        convert = {key: params[key] for key in ("as", "g", "v") if key in params}
        if not convert:
            return None
        if not convertible:
            continue
        target = Conversion(convert.get("as", ""), convert.get("v", ""))
        if convert.get("g", "") != _META_GROUP or target.version not in _META_VERSIONS:
            continue
        if target.kind in ("Table", "PartialObjectMetadata", "PartialObjectMetadataList"):
            return target
    accepted = "application/json;stream=watch" if watch else "application/json"
    raise ApiError(
        406,
        "NotAcceptable",
        f"only the following media types are accepted: {accepted}",
    )


def include_object(query: dict[str, str]) -> str:
    """The row object a Table asks for (``TableOptions.includeObject``; ``Metadata`` when not
    given), or 400 for a value the server does not know."""
    include = query.get("includeObject", "")
    if include not in _INCLUDE_OBJECT:
        raise ApiError.bad_request(
            f'Unable to convert to Table as requested: includeObject: Invalid value: "{include}": '
            "must be 'Metadata', 'Object', 'None', or empty"
        )
    return include or "Metadata"


def _partial(obj: dict[str, Any], version: str) -> dict[str, Any]:
    return {
        "kind": "PartialObjectMetadata",
        "apiVersion": f"{_META_GROUP}/{version}",
        "metadata": obj.get("metadata") or {},
    }


def _table(
    resource: Resource,
    objects: list[dict[str, Any]],
    meta: dict[str, Any],
    target: Conversion,
    query: dict[str, str],
    headers: bool,
) -> dict[str, Any]:
    include = include_object(query)
    printer = PRINTERS[resource.kind]
    now = datetime.now(UTC)
    rows = []
    for obj in objects:
        row = printer.row(obj, now)
        if include == "Object":
            row["object"] = {"apiVersion": resource.api_version, "kind": resource.kind, **obj}
        elif include == "Metadata":
            row["object"] = _partial(obj, target.version)
        else:
            row["object"] = None
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": target.api_version,
        "metadata": meta,
        "columnDefinitions": list(printer.columns) if headers else None,
        "rows": rows,
    }


def _not_acceptable(message: str) -> ApiError:
    return ApiError(406, "NotAcceptable", message)


def convert_object(
    resource: Resource,
    obj: dict[str, Any],
    target: Conversion,
    query: dict[str, str],
    *,
    headers: bool = True,
) -> dict[str, Any]:
    """One object (as stored: without apiVersion and kind) converted as `target` asks: a
    `Table` of one row (`headers=False`: without its columns, as every watch event after the
    first) or its `PartialObjectMetadata`."""
    if target.kind == "Table":
        rv = (obj.get("metadata") or {}).get("resourceVersion")
        meta = {"resourceVersion": rv} if rv else {}
        return _table(resource, [obj], meta, target, query, headers)
    if target.kind == "PartialObjectMetadata":
        return _partial(obj, target.version)
    raise _not_acceptable(
        "you requested PartialObjectMetadataList, but the requested object is not a list "
        f"(*{_go_package(resource)}.{resource.kind})"
    )


def convert_list(
    resource: Resource,
    objects: list[dict[str, Any]],
    meta: dict[str, Any],
    target: Conversion,
    query: dict[str, str],
) -> dict[str, Any]:
    """A list (`meta`: its `ListMeta`) converted as `target` asks: a `Table` or a
    `PartialObjectMetadataList`."""
    if target.kind == "Table":
        return _table(resource, objects, meta, target, query, True)
    if target.kind == "PartialObjectMetadataList":
        return {
            "kind": "PartialObjectMetadataList",
            "apiVersion": target.api_version,
            "metadata": meta,
            "items": [_partial(obj, target.version) for obj in objects],
        }
    raise _not_acceptable(
        "you requested PartialObjectMetadata, but the requested object is a list "
        f"(*{_go_package(resource)}.{resource.list_kind})"
    )


def _go_package(resource: Resource) -> str:
    """The package of the Go type the real server names in a 406 (its internal version)."""
    return resource.group.split(".")[0] if resource.group else "core"
