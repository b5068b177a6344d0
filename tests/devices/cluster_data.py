"""The demo cluster (``devices/fixtures/*.json``) loaded into the mirror, for tests."""

from __future__ import annotations

import json
from pathlib import Path

from mirror.classes import refresh_class_matches
from mirror.store import load

FIXTURES = Path(__file__).resolve().parents[2] / "devices" / "fixtures"


def load_fixture_cluster() -> None:
    """Every object of every fixture file, as the watchers would store them."""
    objects = []
    for path in sorted(FIXTURES.glob("*.json")):
        objects.extend(json.loads(path.read_text())["items"])
    load(objects)
    refresh_class_matches()  # what the watchers schedule after slices change
