"""``{% load portal_format %}``: device memory as a Kubernetes quantity (``{{ bytes|quantity }}``
→ ``80Gi``; ``|rough_quantity`` for usage: ``318.6Gi``) and durations the way they are typed
(``{{ lease|duration }}`` → ``7d``); blank limits read "unlimited". ``{% cel_error message %}``
shows a CEL error with its diagram (the expression, a caret under the column) in monospace."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

from django import template

from portal.durations import format_duration
from portal.quantities import format_bytes, format_bytes_roughly

register = template.Library()


@register.filter
def quantity(value: int | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_bytes(int(value))


@register.filter
def rough_quantity(value: int | None, blank: str = "unlimited") -> str:
    """Usage, read not typed: ``318.6Gi`` rather than ``326236Mi`` (exact in a tooltip)."""
    return blank if value is None else format_bytes_roughly(int(value))


@register.filter
def duration(value: dt.timedelta | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_duration(value)


# cel-go's diagram of an error: " | " + the expression's line, then " | " + dots up to a caret.
DIAGRAM_PREFIX = " | "


@dataclass(frozen=True)
class MessagePart:
    text: str
    is_diagram: bool


def cel_error_parts(message: str) -> list[MessagePart]:
    """``message`` as text and diagrams: each run of cel-go's `` | `` lines becomes one
    diagram, its caret line padded with spaces instead of dots so it reads under the
    expression. A message without a diagram is one text part."""
    parts: list[MessagePart] = []
    for line in str(message).split("\n"):
        is_diagram = line.startswith(DIAGRAM_PREFIX)
        if is_diagram:
            line = line[len(DIAGRAM_PREFIX) :]
            caret = line.lstrip(".")
            if caret == "^":
                line = " " * (len(line) - 1) + caret
        if parts and parts[-1].is_diagram == is_diagram:
            parts[-1] = MessagePart(f"{parts[-1].text}\n{line}", is_diagram)
        else:
            parts.append(MessagePart(line, is_diagram))
    return parts


@register.inclusion_tag("includes/cel_error.html")
def cel_error(message: str) -> dict[str, list[MessagePart]]:
    return {"parts": cel_error_parts(message)}
