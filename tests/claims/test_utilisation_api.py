"""The utilisation endpoints: device, node, claim and tenant, each over a ``range``, each
scoped as its object is."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from claims.models import ResourceClaim, UsageRollup
from devices.models import Device, DeviceRollup, DeviceTelemetry, Resolution

pytestmark = pytest.mark.usefixtures("mirrored_cluster")
HOUR = datetime.timedelta(hours=1)


@pytest.fixture
def gpu() -> Device:
    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-0")
    now = timezone.now()
    reading = DeviceTelemetry.objects.create(
        driver=device.driver,
        pool_name=device.pool_name,
        device_name=device.name,
        node_name=device.node_name,
        sampled_at=now,
        gpu_util=50,
        fb_total_mib=80000,
    )
    DeviceRollup.objects.create(
        device=reading,
        resolution=Resolution.HOUR,
        bucket_start=now - 30 * HOUR,
        samples=240,
        gpu_util_avg=42.5,
        fb_used_mib_avg=20000.0,
    )
    return device


def test_a_devices_history_over_a_week(client_as, bob, gpu):
    url = f"/api/v1/devices/{gpu.driver}/{gpu.pool_name}/{gpu.name}/utilisation/"

    day = client_as(bob).get(url).json()
    week = client_as(bob).get(url, {"range": "7d"}).json()

    assert (day["range"], day["resolution"], day["series"]["gpu_util"]) == ("24h", "5m", [])
    assert (week["range"], week["resolution"]) == ("7d", "1h")
    [(_, util)] = week["series"]["gpu_util"]
    [(_, memory)] = week["series"]["memory_used"]
    assert (util, memory, week["simulated"], week["stale"]) == (42.5, 25.0, False, False)


def test_a_nodes_history_and_an_unknown_range(client_as, bob, gpu):
    client = client_as(bob)

    week = client.get("/api/v1/nodes/dgx-h100-01/utilisation/", {"range": "7d"}).json()
    wrong = client.get("/api/v1/nodes/dgx-h100-01/utilisation/", {"range": "1y"})

    assert week["devices_read"] == 1 and week["series"]["gpu_util"][0][1] == 42.5
    assert wrong.status_code == 400 and "Unknown range '1y'" in wrong.content.decode()
    assert client.get("/api/v1/nodes/no-such-node/utilisation/").status_code == 404


def test_claim_and_tenant_utilisation_are_scoped_like_their_objects(client_as, alice, bob, carol):
    claim = ResourceClaim.objects.get(namespace="gpu-test1", name="pod1-gpu-nscrq")
    now = timezone.now()
    for scope, key in (("claim", claim.uid), ("tenant", "team-a")):
        UsageRollup.objects.create(
            scope=scope,
            key=key,
            resolution="5m",
            bucket_start=now - HOUR,
            device_seconds=300,
            gpu_util_avg=73.0,
            is_simulated=True,
        )
    claim_url = f"/api/v1/resource-claims/{claim.namespace}/{claim.name}/utilisation/"

    mine = client_as(alice).get(claim_url).json()
    tenant = client_as(alice).get("/api/v1/tenants/team-a/utilisation/").json()

    assert mine["series"]["gpu_util"][0][1] == 73.0 and mine["simulated"] is True
    assert (mine["lifetime_average"], mine["device_hours"]) == (73.0, 0.08)
    assert tenant["series"]["gpu_util"][0][1] == 73.0
    # Someone outside the tenant sees neither.
    assert client_as(carol).get(claim_url).status_code == 404
    assert client_as(carol).get("/api/v1/tenants/team-a/utilisation/").status_code == 404
