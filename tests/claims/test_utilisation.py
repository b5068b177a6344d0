"""Utilisation per claim, namespace and tenant: what a claim's devices did while it held them."""

from __future__ import annotations

import datetime

import pytest

from claims.models import AllocationRecord, UsageRollup
from claims.usage.utilisation import claim_utilisation, roll_up_usage
from devices.models import DeviceRollup, DeviceTelemetry, Resolution

T0 = datetime.datetime(2026, 11, 23, 10, 0, tzinfo=datetime.UTC)
FIVE = datetime.timedelta(minutes=5)


def reading(device: str, util: float, *, bucket: datetime.datetime = T0, simulated=False) -> None:
    row, _ = DeviceTelemetry.objects.get_or_create(
        driver="gpu.nvidia.com",
        pool_name="n1",
        device_name=device,
        defaults={"node_name": "n1", "sampled_at": bucket, "is_simulated": simulated},
    )
    DeviceRollup.objects.create(
        device=row,
        resolution=Resolution.FIVE_MINUTES,
        bucket_start=bucket,
        samples=20,
        gpu_util_avg=util,
        fb_used_mib_avg=1000.0,
        power_w_avg=300.0,
    )


def held(claim: str, device: str, tenant, *, start=T0, end=None, admin=False, request="gpu"):
    return AllocationRecord.objects.create(
        claim_uid=f"uid-{claim}",
        namespace=tenant.namespaces.first().name if tenant else "elsewhere",
        claim_name=claim,
        tenant=tenant,
        tenant_name=tenant.name if tenant else "",
        tenant_slug=tenant.slug if tenant else "",
        request=request,
        device_class="gpu.nvidia.com",
        driver="gpu.nvidia.com",
        pool="n1",
        device_name=device,
        admin_access=admin,
        started_at=start,
        ended_at=end,
    )


def rollup(scope: str, key: str) -> UsageRollup:
    return UsageRollup.objects.get(scope=scope, key=key, resolution="5m", bucket_start=T0)


@pytest.fixture
def readings(db):
    reading("gpu-0", 80.0)
    reading("gpu-1", 20.0)


def test_a_device_held_for_half_a_bucket_counts_half(readings, team_a):
    held("train", "gpu-0", team_a)
    held("train", "gpu-1", team_a, start=T0 + datetime.timedelta(seconds=150))

    roll_up_usage()

    claim = rollup("claim", "uid-train")
    assert claim.device_seconds == 450.0
    assert claim.gpu_util_avg == pytest.approx((80 * 300 + 20 * 150) / 450)
    assert (claim.claim_name, claim.tenant) == ("train", team_a)


def test_a_device_under_two_requests_or_shares_of_one_claim_counts_once(readings, team_a):
    held("shared", "gpu-0", team_a, request="a")
    held("shared", "gpu-0", team_a, request="b")

    roll_up_usage()

    assert rollup("claim", "uid-shared").device_seconds == 300.0


def test_an_admin_access_observer_is_never_counted(readings, team_a):
    held("watch", "gpu-0", team_a, admin=True)
    held("train", "gpu-1", team_a)

    roll_up_usage()

    assert not UsageRollup.objects.filter(key="uid-watch").exists()
    assert rollup("tenant", team_a.slug).gpu_util_avg == 20.0


def test_namespace_and_tenant_roll_up_their_claims(readings, team_a, team_b):
    held("one", "gpu-0", team_a)
    held("two", "gpu-1", team_a)
    held("other", "gpu-1", team_b, end=T0 + datetime.timedelta(seconds=60))

    roll_up_usage()
    roll_up_usage()  # again: the same rows

    tenant = rollup("tenant", team_a.slug)
    assert (tenant.device_seconds, tenant.gpu_util_avg) == (600.0, 50.0)
    assert rollup("tenant", team_b.slug).device_seconds == 60.0
    assert rollup("namespace", team_a.namespaces.first().name).device_seconds == 600.0
    assert UsageRollup.objects.filter(resolution="5m").count() == 7  # 3 claims, 2 ns, 2 tenants


def test_a_claims_summary_weights_its_buckets_and_says_simulated(db, team_a):
    reading("gpu-0", 90.0, simulated=True)
    reading("gpu-0", 30.0, bucket=T0 + FIVE, simulated=True)
    record = held("train", "gpu-0", team_a)
    roll_up_usage()

    summary = claim_utilisation(record_claim(record), now=T0 + 2 * FIVE)

    assert summary is not None
    assert (summary.average, summary.device_hours, summary.is_simulated) == (60.0, 0.17, True)
    assert [value for _, value in summary.history] == [90.0, 30.0]


def record_claim(record: AllocationRecord):
    class Claim:
        uid = record.claim_uid

    return Claim()


def test_a_claim_without_readings_has_no_summary(db):
    assert claim_utilisation(record_claim(AllocationRecord(claim_uid="none"))) is None


def test_the_claim_page_shows_its_utilisation(client_as, alice, mirrored_cluster):
    from claims.models import ResourceClaim

    claim = ResourceClaim.objects.get(namespace="gpu-test1", name="pod1-gpu-nscrq")
    page = client_as(alice).get(claim.get_absolute_url()).content.decode()
    assert "No reading attributed yet" in page

    UsageRollup.objects.create(
        scope="claim",
        key=claim.uid,
        resolution="5m",
        bucket_start=datetime.datetime.now(tz=datetime.UTC) - FIVE,
        device_seconds=300,
        gpu_util_avg=73.0,
        is_simulated=True,
    )
    page = client_as(alice).get(claim.get_absolute_url()).content.decode()
    assert "73.0 %" in page and ">simulated<" in page and "<svg" in page
