"""The two ways a selector fails: it does not compile, or it fails while evaluating."""

from __future__ import annotations

__all__ = ["CelCompileError", "CelRuntimeError"]


class CelCompileError(Exception):
    """The expression does not compile in the DRA environment (message includes line:col)."""


class CelRuntimeError(Exception):
    """Evaluation failed for one device (missing key, bad argument, cost limit, non-bool...)."""
