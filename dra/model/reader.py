"""Reading API JSON with errors that name the object and the field."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from dra.quantity import Quantity, QuantityError, parse_quantity

__all__ = ["InvalidObject", "qualify", "Reader", "AttributeValue"]


class InvalidObject(ValueError):
    """An input object that is not valid resource.k8s.io/v1 JSON of the expected shape."""


# (kind, value): kind is "int", "bool", "string", "version" or "list" (1.36 list attributes,
# which this allocator does not model). Hashable, so it can key caches.
AttributeValue = tuple[str, Any]

# Quantities parsed so far, by (JSON type, value): a case repeats a few quantity strings on
# thousands of devices. Bounded so a long-lived process does not grow with every distinct one.
_QUANTITIES: dict[tuple[type, str | int | float], Quantity] = {}
_QUANTITIES_LIMIT = 4096


def qualify(name: str, driver: str) -> tuple[str, str]:
    """Split a QualifiedName into (domain, id); an unqualified name belongs to the driver."""
    domain, slash, identifier = name.partition("/")
    if not slash:
        return driver, name
    return domain, identifier


class Reader:
    """Field access with errors that name the object and the path."""

    def __init__(self, label: str) -> None:
        self.label = label

    def fail(self, path: str, problem: str) -> InvalidObject:
        return InvalidObject(f"{self.label}: {path}: {problem}")

    def obj(self, value: Any, path: str, required: bool = False) -> Mapping[str, Any]:
        if type(value) is dict:
            return value
        if value is None:
            if required:
                raise self.fail(path, "required")
            return {}
        if not isinstance(value, Mapping):
            raise self.fail(path, "must be an object")
        return value

    def lst(self, value: Any, path: str) -> Sequence[Any]:
        if value is None:
            return ()
        if not isinstance(value, list):
            raise self.fail(path, "must be a list")
        return value

    def string(self, value: Any, path: str, required: bool = False) -> str | None:
        if value is None or (required and value == ""):
            if required:
                raise self.fail(path, "required")
            return None
        if not isinstance(value, str):
            raise self.fail(path, "must be a string")
        return value

    def integer(self, value: Any, path: str) -> int | None:
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.fail(path, "must be an integer")
        return value

    def boolean(self, value: Any, path: str) -> bool | None:
        if value is None:
            return None
        if not isinstance(value, bool):
            raise self.fail(path, "must be true or false")
        return value

    def quantity(self, value: Any, path: str) -> Quantity:
        if isinstance(value, bool) or not isinstance(value, str | int | float):
            raise self.fail(path, "must be a quantity string")
        key = (type(value), value)
        parsed = _QUANTITIES.get(key)
        if parsed is None:
            try:
                parsed = parse_quantity(str(value).strip())
            except QuantityError as error:
                raise self.fail(path, str(error)) from None
            if len(_QUANTITIES) >= _QUANTITIES_LIMIT:
                _QUANTITIES.clear()
            _QUANTITIES[key] = parsed
        return parsed

    def strings(self, value: Any, path: str) -> tuple[str, ...]:
        items = self.lst(value, path)
        result = []
        for index, item in enumerate(items):
            text = self.string(item, f"{path}[{index}]")
            result.append(text or "")
        return tuple(result)
