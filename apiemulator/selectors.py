"""Label and field selectors with the API server's syntax."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

__all__ = ["SelectorError", "parse_field_selector", "parse_label_selector"]

Matcher = Callable[[dict[str, Any]], bool]

_SET_RE = re.compile(r"^\s*(\S+)\s+(in|notin)\s*\((.*)\)\s*$")
_OP_RE = re.compile(r"^\s*([^=!\s]+)\s*(==|!=|=)\s*(\S*)\s*$")


class SelectorError(ValueError):
    """A selector the server cannot parse (answered with 400 BadRequest)."""


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside parentheses: `a in (x,y),b` -> [`a in (x,y)`, `b`]."""
    parts: list[str] = []
    depth = 0
    current: list[str] = []
    for char in text:
        if char == "(":
            depth += 1
        elif char == ")":
            depth -= 1
        if char == "," and depth == 0:
            parts.append("".join(current))
            current = []
        else:
            current.append(char)
    parts.append("".join(current))
    return [p.strip() for p in parts if p.strip()]


def _label_requirement(term: str) -> Callable[[dict[str, str]], bool]:
    if m := _SET_RE.match(term):
        key, op, raw = m.group(1), m.group(2), m.group(3)
        values = {v.strip() for v in raw.split(",") if v.strip()}
        if op == "in":
            return lambda labels: labels.get(key) in values
        return lambda labels: labels.get(key) not in values
    if m := _OP_RE.match(term):
        key, op, value = m.group(1), m.group(2), m.group(3)
        if op == "!=":
            return lambda labels: labels.get(key) != value
        return lambda labels: labels.get(key) == value
    if term.startswith("!"):
        key = term[1:].strip()
        if key and " " not in key:
            return lambda labels: key not in labels
    elif term and " " not in term:
        return lambda labels: term in labels
    raise SelectorError(f"unable to parse requirement: {term!r}")


def parse_label_selector(text: str | None) -> Matcher | None:
    """A predicate over whole objects, or None when the selector selects everything."""
    if not text:
        return None
    requirements = [_label_requirement(term) for term in _split_top_level(text)]

    def matches(obj: dict[str, Any]) -> bool:
        labels = obj.get("metadata", {}).get("labels") or {}
        return all(req(labels) for req in requirements)

    return matches


def _field_value(obj: dict[str, Any], path: str) -> str:
    value: Any = obj
    for part in path.split("."):
        if not isinstance(value, dict):
            return ""
        value = value.get(part)
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def parse_field_selector(text: str | None, refuse: Callable[[str], str | None]) -> Matcher | None:
    """Field selectors: `field=value`, `field==value`, `field!=value`, ANDed with commas.
    `refuse(field)` says why a field cannot be selected on (None: it can)."""
    if not text:
        return None
    requirements: list[tuple[str, bool, str]] = []
    for term in _split_top_level(text):
        m = _OP_RE.match(term)
        if not m:
            raise SelectorError(f"invalid selector: {term!r}")
        field, op, value = m.group(1), m.group(2), m.group(3)
        if (why := refuse(field)) is not None:
            raise SelectorError(why)
        requirements.append((field, op != "!=", value))

    def matches(obj: dict[str, Any]) -> bool:
        return all((_field_value(obj, f) == v) == eq for f, eq, v in requirements)

    return matches
