"""One line of ``manage.py allocate`` in, one line out (the contract in docs/allocator.md).

A line is checked for nesting before it is decoded, so a hostile line can neither recurse the
decoder into a RecursionError nor cost more than a few passes of C-speed byte operations. Lines
are decoded with msgspec (about twice as fast as ``json`` on the 33 MB cases of the cold
benchmark); a line msgspec refuses is decoded again with ``json``, which accepts what the
contract always accepted (``NaN``, ``1e400``, lone surrogate escapes) and words the error.
Garbage collection is paused while a line is decoded and allocated: the case is millions of
young objects that are all alive until the answer is written, so collecting is pure cost.
"""

from __future__ import annotations

import json
import re
from typing import Any

import msgspec

from dra.allocator.contract import run_case
from dra.memory import without_cyclic_gc

__all__ = ["MAX_JSON_DEPTH", "answer_line", "nests_too_deep"]

MAX_JSON_DEPTH = 100

_ESCAPE = re.compile(rb"\\.", re.DOTALL)
# Keep quotes and brackets only, braces read as brackets: in valid JSON every pair is matched,
# so one kind of bracket nests exactly as the two kinds do.
_BRACKETS = bytes.maketrans(b"{}", b"[]")
_NOT_KEPT = bytes(byte for byte in range(256) if byte not in b'"[]{}')


def nests_too_deep(line: str) -> bool:
    """Whether the JSON text nests more than MAX_JSON_DEPTH levels (or leaves that many
    brackets open), found without recursing and in a few passes over the bytes.

    Escapes go first (so only delimiting quotes are left), then everything but quotes and
    brackets; text between quote pairs is string content and is dropped; each pass then
    peels the innermost pairs, one level per pass.
    """
    data = line.encode("utf-8", "surrogatepass")
    if b"\\" in data:
        data = _ESCAPE.sub(b"", data)
    kept = data.translate(_BRACKETS, _NOT_KEPT)
    # Two adjacent quotes are an empty string or the end of one and the start of the next with
    # nothing between: dropping them leaves what is outside strings as it was.
    kept = kept.replace(b'""', b"")
    if b'"' in kept:
        kept = b"".join(kept.split(b'"')[::2])
    for _ in range(MAX_JSON_DEPTH + 1):
        peeled = kept.replace(b"[]", b"")
        if len(peeled) == len(kept):
            # Only unmatched brackets are left (closing ones, then opening ones).
            return kept.count(b"[") > MAX_JSON_DEPTH
        kept = peeled
    return True


def _decode(line: str) -> Any:
    try:
        return msgspec.json.decode(line)
    except (msgspec.DecodeError, UnicodeError):
        return json.loads(line)


def _run_line(line: str, timeout: float | None) -> dict[str, Any]:
    if nests_too_deep(line):
        return {
            "name": None,
            "status": "error",
            "error": f"invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels",
        }
    try:
        case = _decode(line)
    except (json.JSONDecodeError, RecursionError) as error:
        return {"name": None, "status": "error", "error": f"invalid JSON: {error}"}
    try:
        return run_case(case, timeout)
    except Exception as error:  # one broken case must not stop the stream  # noqa: BLE001
        name = case.get("name") if isinstance(case, dict) else None
        return {"name": name, "status": "error", "error": f"internal error: {error!r}"}


def answer_line(line: str, timeout: float | None) -> str:
    """The output line (without its newline) for one input line, whatever the line holds."""
    with without_cyclic_gc():
        output = _run_line(line, timeout)
    try:
        return json.dumps(output, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as error:
        name = output.get("name")
        fallback = {
            "name": name if isinstance(name, str | int | float | bool) else None,
            "status": "error",
            "error": f"internal error: the output could not be written: {error!r}",
        }
        return json.dumps(fallback, separators=(",", ":"))
