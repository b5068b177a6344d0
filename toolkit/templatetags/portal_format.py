"""``{% load portal_format %}``: device memory as a Kubernetes quantity (``{{ bytes|quantity }}``
→ ``80Gi``; ``|rough_quantity`` for usage: ``318.6Gi``) and durations the way they are typed
(``{{ lease|duration }}`` → ``7d``); blank limits read "unlimited". ``{% cel_error message %}``
shows a CEL error with its diagram (the expression, a caret under the column) in monospace.
``{{ percent|width_class }}`` sizes a bar without a ``style`` attribute."""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

from django import template

from toolkit.durations import format_duration
from toolkit.quantities import format_bytes, format_bytes_roughly

register = template.Library()


@register.filter
def quantity(value: int | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_bytes(int(value))


@register.filter
def rough_quantity(value: int | None, blank: str = "unlimited") -> str:
    """Usage, read not typed: ``318.6Gi`` rather than ``326236Mi`` (exact in a tooltip)."""
    return blank if value is None else format_bytes_roughly(int(value))


@register.filter
def width_class(percent: float | None) -> str:
    """The class that gives an element ``percent`` % of its container's width, in whole
    percent (``w-pct-0`` … ``w-pct-100``, static/css/portal.css): the Content-Security-Policy
    allows no ``style`` attribute."""
    if percent is None:
        return "w-pct-0"
    return f"w-pct-{min(100, max(0, round(float(percent))))}"


@register.filter
def duration(value: dt.timedelta | None, blank: str = "unlimited") -> str:
    return blank if value is None else format_duration(value)


# cel-go's diagram of an error: " | " + the expression's line, then " | " + dots up to a caret.
DIAGRAM_PREFIX = " | "
# How the allocator (as Kubernetes') names a selector: by its index, from 0.
SELECTOR_NUMBER = re.compile(r"\bselector #(\d+)")
# A longer expression line is cut to this many characters around the caret, so the caret shows
# in a narrow panel (the preview, an alert) without scrolling.
DIAGRAM_WIDTH = 44


@dataclass(frozen=True)
class MessagePart:
    text: str
    is_diagram: bool


def _window(line: str, column: int) -> tuple[str, int]:
    """``line`` cut to ``DIAGRAM_WIDTH`` characters around ``column`` (an ellipsis marks each
    cut), and the column in the cut line."""
    if len(line) <= DIAGRAM_WIDTH:
        return line, column
    start = min(max(column - DIAGRAM_WIDTH * 2 // 3, 0), len(line) - DIAGRAM_WIDTH)
    end = start + DIAGRAM_WIDTH
    head, tail = ("…" if start else ""), ("…" if end < len(line) else "")
    return head + line[start:end] + tail, column - start + len(head)


def _diagram(lines: list[str]) -> str:
    """cel-go's diagram lines as shown: a caret line (dots, then ``^``) gets spaces instead of
    dots, under its expression line cut to a window around the caret."""
    shown: list[str] = []
    for line in lines:
        caret = line.lstrip(".")
        if caret == "^" and shown:
            expression, column = _window(shown[-1], len(line) - 1)
            shown[-1] = expression
            line = " " * column + caret
        shown.append(line)
    return "\n".join(shown)


def _counted_from_one(match: re.Match[str]) -> str:
    return f"selector {int(match.group(1)) + 1}"


def cel_error_parts(message: str) -> list[MessagePart]:
    """``message`` as text and diagrams: each run of cel-go's `` | `` lines becomes one
    diagram (:func:`_diagram`). A message without a diagram is one text part.

    The allocator's messages keep Kubernetes' words, which number selectors from 0
    (``selector #0``: ``manage.py allocate`` answers as upstream does); pages number them from
    1, as the form does, so the text reads ``selector 1``."""
    parts: list[MessagePart] = []
    run: list[str] = []
    message = SELECTOR_NUMBER.sub(_counted_from_one, str(message))
    for line in [*message.split("\n"), None]:
        if line is not None and line.startswith(DIAGRAM_PREFIX):
            run.append(line[len(DIAGRAM_PREFIX) :])
            continue
        if run:
            parts.append(MessagePart(_diagram(run), is_diagram=True))
            run = []
        if line is None:
            break
        if parts and not parts[-1].is_diagram:
            parts[-1] = MessagePart(f"{parts[-1].text}\n{line}", is_diagram=False)
        else:
            parts.append(MessagePart(line, is_diagram=False))
    return parts


@register.inclusion_tag("includes/cel_error.html")
def cel_error(message: str) -> dict[str, list[MessagePart]]:
    return {"parts": cel_error_parts(message)}
