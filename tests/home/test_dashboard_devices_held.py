"""The dashboard's "devices held" per tenant is a count of devices, a whole number: the devices
the tenant's claims hold now (a device two of its claims share counts once), not the
utilisation rollup's device-seconds over its last 5-minute bucket (which read "13.1 devices
held" when a device was held for part of the bucket)."""

from __future__ import annotations

import datetime
import re

import pytest
from django.utils import timezone

from claims.models import AllocatedDevice, ResourceClaim, UsageRollup
from tests.claims.test_sharing_pages import shared_device

pytestmark = pytest.mark.django_db


def held_by_team_a() -> set[tuple[str, str, str]]:
    return set(
        AllocatedDevice.objects.filter(
            claim__tenant__slug="team-a", claim__is_allocated=True, admin_access=False
        ).values_list("driver", "pool", "device_name")
    )


def team_a_usage_line(page: str) -> str:
    match = re.search(r'data-testid="tenant-usage">(.*?)</div>', page, re.S)
    assert match is not None
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(1))).strip()


def test_it_counts_the_devices_held_now_not_the_last_buckets_device_seconds(
    client_as, alice, mirrored_cluster
):
    # 13 devices for the whole bucket and one for 30 s: 3930 device-seconds, "13.1 devices".
    UsageRollup.objects.create(
        scope="tenant",
        key="team-a",
        resolution="5m",
        bucket_start=timezone.now() - datetime.timedelta(minutes=5),
        device_seconds=13 * 300 + 30,
        gpu_util_avg=40.0,
    )
    held = len(held_by_team_a())
    assert held > 0

    line = team_a_usage_line(client_as(alice).get("/").content.decode())

    assert line.startswith(f"GPU 40 % · {held} device{'s' if held != 1 else ''} held")
    assert "13.1" not in line


def test_a_device_shared_by_two_of_the_tenants_claims_counts_once(
    client_as, alice, mirrored_cluster
):
    before = held_by_team_a()
    device = shared_device("gpu-test1", "gpu-test1")  # two claims of team-a's share gpu-4
    ResourceClaim.objects.filter(namespace="gpu-test1", name__startswith="share-").update(
        tenant=alice.memberships.get().tenant
    )

    counted = ResourceClaim.objects.filter(tenant__slug="team-a").devices_held_by_tenant()

    expected = len(before | {(device.driver, device.pool_name, device.name)})
    assert counted == {alice.memberships.get().tenant_id: expected}
    assert f"{expected} devices held" in team_a_usage_line(
        client_as(alice).get("/").content.decode()
    )
