"""Work that allocates hundreds of thousands of short-lived objects, run without the cyclic
garbage collector."""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator

__all__ = ["without_cyclic_gc"]


@contextlib.contextmanager
def without_cyclic_gc() -> Iterator[None]:
    """Reference counting frees short-lived rows and dicts all the same; the cyclic collector
    would meanwhile walk every live object of the process several times (its cost grows with
    the process's heap, not with the work). It runs again afterwards."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
