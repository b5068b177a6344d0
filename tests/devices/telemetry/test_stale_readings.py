"""Stale readings age out of what a node reads now, and say so: a simulation switched off
leaves its last readings behind, listed as stale, no longer making the node read as simulated
or counting in its average."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from devices.models import TelemetrySource
from devices.telemetry.ingest import ingest_source

pytestmark = pytest.mark.usefixtures("mirrored_cluster")
H100_NODE = "dgx-h100-01"


@pytest.fixture
def simulation_switched_off() -> TelemetrySource:
    """The demo's simulation read every GPU ten minutes ago, then was switched off."""
    simulated = TelemetrySource.objects.create(name="demo", kind="simulated")
    ingest_source(simulated, timezone.now() - datetime.timedelta(minutes=10))
    simulated.enabled = False
    simulated.save()
    return simulated


def test_a_node_read_by_a_real_source_no_longer_says_simulated(
    client_as, bob, root, http_server, exporter_routes, simulation_switched_off
):
    # The exporter's H100 NVL pair carries the UUIDs of dgx-h100-01's gpu-0 and gpu-1.
    exporters = TelemetrySource.objects.create(
        name="exporters", kind="exporters", exporter_targets=[http_server(exporter_routes)]
    )
    ingest_source(exporters)

    api = client_as(bob).get(f"/api/v1/nodes/{H100_NODE}/utilisation/").json()
    page = client_as(bob).get(f"/nodes/{H100_NODE}/").content.decode()
    topology = client_as(bob).get(f"/nodes/{H100_NODE}/topology/").content.decode()
    telemetry = client_as(root).get("/telemetry/").content.decode()

    assert api["simulated"] is False and api["stale"] is False
    assert (api["devices_read"], api["devices_stale"]) == (2, 6)
    stale = {d["device"]: d["simulated"] for d in api["devices"] if d["stale"]}
    assert stale == {f"gpu-{i}": True for i in range(2, 8)}  # listed, and what they were
    card = page.split('id="node-utilisation"', 1)[1].split("</section>", 1)[0]
    assert ">simulated<" not in card
    assert "6 devices not read for over two minutes: shown stale, not counted" in card
    assert card.count(">stale</span>") == 6
    assert "43.5 %" in card  # the average of the two fresh readings (87 % and 0 %) only
    assert "simulated utilisation" not in topology
    assert 'data-testid="fresh-count">5<' in telemetry  # the exporter's five devices
    assert 'text-bg-info">simulated</span></div>' not in telemetry


def test_a_node_whose_readings_all_aged_out_is_stale_and_shows_what_they_were(
    client_as, bob, simulation_switched_off
):
    api = client_as(bob).get(f"/api/v1/nodes/{H100_NODE}/utilisation/").json()
    page = client_as(bob).get(f"/nodes/{H100_NODE}/").content.decode()

    assert api["simulated"] is True and api["stale"] is True
    assert (api["devices_read"], api["devices_stale"]) == (0, 8)
    card = page.split('id="node-utilisation"', 1)[1].split("</section>", 1)[0]
    assert ">simulated<" in card and ">stale<" in card
    assert "average over 0 devices read in the last two minutes" in card
