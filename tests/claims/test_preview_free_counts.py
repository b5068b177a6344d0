"""The New claim preview counts free devices as every other page does (their availability), and
where free partitions do not all fit together it says both, with the fragmentation page's
number (issue 22, item 5)."""

from __future__ import annotations

import re

import pytest

from claims.capacity.fragmentation_reads import cluster_advice
from claims.capacity.index import reset_index
from claims.requests.preview import preview
from claims.requests.specs import ClaimInput
from devices.models import Device, DeviceClass, DeviceState
from kube.kinds import Kind
from tests.devices.cluster_data import allocated_claim

THREE_G = 'device.attributes["gpu.nvidia.com"].profile == "3g.20gb"'
ONE_G_ME = 'device.attributes["gpu.nvidia.com"].profile == "1g.5gb+me"'


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


@pytest.fixture(autouse=True)
def _no_time_budget(settings):
    """Every node is counted in one preview, however slow the machine (no timing in tests)."""
    settings.CLAIMS_PREVIEW_FIT_BUDGET_MS = 600_000
    settings.FRAGMENTATION_BUDGET_MS = 600_000


def claim(device_class: str, *selectors: str) -> ClaimInput:
    return ClaimInput(
        namespace="gpu-test1", name="preview", device_class_name=device_class, selectors=selectors
    )


def hold_whole_a100s(cluster, resync, *gpus: str) -> None:
    """A claim holding whole GPUs of dgx-a100-01, as the approved README request did."""
    exactly = {"deviceClassName": "gpu.nvidia.com", "count": len(gpus)}
    requests = [{"name": "gpus", "exactly": exactly}]
    results = [
        {"request": "gpus", "driver": "gpu.nvidia.com", "pool": "dgx-a100-01", "device": gpu}
        for gpu in gpus
    ]
    claim = allocated_claim("three-a100s", "gpu-test1", "dgx-a100-01", requests, results)
    status = claim.pop("status")
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim)
    created["status"] = status
    cluster.replace_status(Kind.RESOURCE_CLAIMS, created)
    resync()


def free_on(node: str, device_class: str) -> int:
    return (
        Device.objects.on_node(node)
        .filter(class_matches__device_class_name=device_class, state=DeviceState.FREE)
        .count()
    )


def preview_panel(client, device_class: str, *selectors: str) -> str:
    """The preview fragment's text, tags dropped."""
    response = client.post(
        "/claims/requests/preview/",
        {
            "namespace": "gpu-test1",
            "name": "x",
            "device_class": device_class,
            "count": "1",
            "selectors": "\n".join(selectors),
            "sharing": "claim",
        },
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", response.content.decode()))


def test_a_gpu_whose_partitions_are_in_use_is_blocked_not_free(inventory, client_as, bob):
    # dgx-a100-01's gpu-0 and gpu-1 have MIG partitions allocated (claims.json).
    blocked = Device.objects.filter(pool_name="dgx-a100-01", name__in=["gpu-0", "gpu-1"])
    assert set(blocked.values_list("state", flat=True)) == {DeviceState.BLOCKED}
    listed = DeviceClass.objects.with_device_counts().get(name="gpu.nvidia.com")
    a100s = free_on("dgx-a100-01", "gpu.nvidia.com")
    h100s = free_on("dgx-h100-02", "gpu.nvidia.com")
    assert (listed.free_device_count, a100s, h100s) == (15, 6, 4)  # one H100 there is tainted

    text = preview_panel(client_as(bob), "gpu.nvidia.com")

    assert "24 devices of gpu.nvidia.com match the selectors; 15 are free now." in text
    assert " dgx-a100-01 8 6 " in text  # not 8 free: two of its GPUs are Blocked
    assert " dgx-h100-02 8 4 " in text  # not 5: the tainted one is not free
    assert "fit together" not in text  # each GPU has counters of its own: all free ones fit


def test_the_3g20gb_profile_counts_what_the_fragmentation_page_says_fits(live, bob):
    _, cluster, resync = live
    hold_whole_a100s(cluster, resync, "gpu-2", "gpu-3", "gpu-4")
    fits = {s.shape.key: s.fits for s in cluster_advice().shapes}

    result = preview(bob, claim("mig.nvidia.com", THREE_G))

    free = Device.objects.filter(
        state=DeviceState.FREE, attributes__profile__string="3g.20gb"
    ).count()
    assert result.matched == 16
    assert result.free == free == fits["mig.nvidia.com:3g.20gb"] == 6  # not 14
    assert result.fit_together == 6
    assert not result.fit_differs


def test_where_free_partitions_do_not_all_fit_the_panel_says_both(live, client_as, bob):
    # Every 1g.5gb+me placement is free alone, but a GPU has one media extension.
    fits = {s.shape.key: s.fits for s in cluster_advice().shapes}
    free = Device.objects.filter(
        state=DeviceState.FREE, attributes__profile__string="1g.5gb+me"
    ).count()

    result = preview(bob, claim("mig.nvidia.com", ONE_G_ME))

    assert result.free == free == 42
    assert result.fit_together == fits["mig.nvidia.com:1g.5gb+me"] == 6
    assert result.fit_differs
    assert [(row.node, row.free, row.fit_together) for row in result.nodes] == [
        ("dgx-a100-01", 42, 6)
    ]
    text = preview_panel(client_as(bob), "mig.nvidia.com", ONE_G_ME)
    assert "42 are free now." in text
    assert "allocated one after another, 6 of the 42 fit together." in text
    assert "Fit together" in text
