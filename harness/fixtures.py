"""The demo cluster's objects (``devices/fixtures/*.json``) for tests and benchmarks."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

__all__ = ["FIXTURES", "fixture_objects"]

FIXTURES = Path(__file__).resolve().parents[1] / "devices" / "fixtures"


def fixture_objects() -> list[dict[str, Any]]:
    """Every object of every fixture file, in file order."""
    return [
        item
        for path in sorted(FIXTURES.glob("*.json"))
        for item in json.loads(path.read_text())["items"]
    ]
