"""Faults a test injects into the emulator: fail, drop or slow down matching requests."""

from __future__ import annotations

import re
from dataclasses import dataclass

__all__ = ["Fault"]


@dataclass
class Fault:
    """One injected fault. `count=None` means until cleared.

    action: "error" answers `status` (500) with a Status body; "drop" closes the connection
    (for a watch: after `after_events` events); "latency" sleeps `seconds` and then serves.
    """

    action: str
    count: int | None = 1
    path: str | None = None  # regex searched in the request path
    method: str | None = None
    status: int = 500
    seconds: float = 0.0
    after_events: int = 0

    def matches(self, method: str, path: str) -> bool:
        if self.method and self.method.upper() != method:
            return False
        return not self.path or re.search(self.path, path) is not None
