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


def allocated_claim(
    name: str, namespace: str, node: str, requests: list[dict], results: list[dict]
) -> dict:
    """A ResourceClaim as the scheduler leaves it: ``requests`` allocated as ``results`` on
    ``node``."""
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"devices": {"requests": requests}},
        "status": {
            "allocation": {
                "devices": {"results": results},
                "nodeSelector": {
                    "nodeSelectorTerms": [
                        {
                            "matchFields": [
                                {"key": "metadata.name", "operator": "In", "values": [node]}
                            ]
                        }
                    ]
                },
            }
        },
    }
