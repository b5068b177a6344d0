"""Each telemetry ingest cycle is timed per source on ``/metrics``."""

from __future__ import annotations

import pytest

from devices.models import TelemetrySource
from devices.telemetry.ingest import ingest_source
from tests.prometheus import sample

pytestmark = pytest.mark.usefixtures("mirrored_cluster")
CYCLES = "dra_portal_telemetry_cycle_duration_seconds_count"


def test_every_cycle_is_timed_per_source(client):
    simulated = TelemetrySource.objects.create(
        name="simulated-metrics", kind=TelemetrySource.Kind.SIMULATED
    )
    before = sample(client, CYCLES, source="simulated-metrics")
    assert ingest_source(simulated, force=True).ran
    assert ingest_source(simulated, force=True).ran
    assert sample(client, CYCLES, source="simulated-metrics") == before + 2


def test_a_failing_source_is_timed_too(client):
    unreachable = TelemetrySource.objects.create(
        name="exporters-metrics",
        kind=TelemetrySource.Kind.EXPORTERS,
        exporter_targets=["127.0.0.1:9"],
    )
    before = sample(client, CYCLES, source="exporters-metrics")
    ingest_source(unreachable, force=True)
    assert sample(client, CYCLES, source="exporters-metrics") == before + 1
