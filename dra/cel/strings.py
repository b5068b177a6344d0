"""``charAt`` and ``substring`` of cel-go's strings extension, with cel-go's errors.

cel-cpp's strings extension answers the same values and fails the same calls, but words the
errors its own way (``<string>.substring(<start>, <end>): <start> or <end> is greater than
<string>.size()``) where cel-go names the index (``index out of range: 40``, ``invalid
substring range. start: 4, end: 3``). Member calls of both are renamed (same length, in the
checked and the evaluated text, as ``indexOf`` in :mod:`dra.cel.lists`) to :data:`RENAMED`
aliases implemented here; the cost meter still charges them by their own names. Indexes count
code points, as Go's ``[]rune``.
"""

from __future__ import annotations

from dra.cel.errors import CelRuntimeError

__all__ = ["RENAMED", "char_at", "substring"]

# member function → the same-length alias it is declared under
RENAMED = {"charAt": "dra_at", "substring": "dra_subst"}


def _out_of_range(index: int) -> CelRuntimeError:
    return CelRuntimeError(f"index out of range: {index}")


def char_at(text: str, index: int) -> str:
    """The code point at ``index``; the end of the text gives the empty string."""
    if index < 0 or index > len(text):
        raise _out_of_range(index)
    return text[index] if index < len(text) else ""


def substring(text: str, start: int, end: int | None = None) -> str:
    """From ``start`` to the end, or to ``end`` (exclusive), checked in cel-go's order."""
    if end is None:
        if start < 0 or start > len(text):
            raise _out_of_range(start)
        return text[start:]
    if start > end:
        raise CelRuntimeError(f"invalid substring range. start: {start}, end: {end}")
    if start < 0 or start > len(text):
        raise _out_of_range(start)
    if end < 0 or end > len(text):
        raise _out_of_range(end)
    return text[start:end]
