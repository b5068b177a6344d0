"""Reading the portal's ``/metrics`` in tests, as Prometheus parses it."""

from __future__ import annotations

from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def scrape(client: Any, **headers: Any) -> dict[str, list[Any]]:
    """Family name → samples, from ``/metrics`` (as the test client, from 127.0.0.1)."""
    response = client.get("/metrics", **headers)
    assert response.status_code == 200, response.content
    assert response["Content-Type"] == "text/plain; version=0.0.4; charset=utf-8"
    families = text_string_to_metric_families(response.content.decode())
    return {family.name: family.samples for family in families}


def sample(client: Any, name: str, **labels: str) -> float:
    """The value of the sample ``name`` with ``labels`` (0 when there is none yet)."""
    for samples in scrape(client).values():
        for found in samples:
            if found.name == name and all(found.labels.get(k) == v for k, v in labels.items()):
                return float(found.value)
    return 0.0
