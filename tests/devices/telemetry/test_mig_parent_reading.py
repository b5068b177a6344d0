"""A GPU in MIG mode has no utilisation of its own (NVML reports none): its pages say so and
show what its partitions read, instead of a figure that looks like an idle GPU's."""

from __future__ import annotations

import datetime

import pytest
from django.utils import timezone

from devices.models import Device, DeviceTelemetry, TelemetrySource
from devices.telemetry.ingest import ingest_source

pytestmark = pytest.mark.usefixtures("mirrored_cluster")


@pytest.fixture
def mig_gpu() -> Device:
    """A GPU of dgx-a100-01 whose partitions the fixture's claims hold, read by the demo's
    simulation."""
    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))
    parents = set(
        Device.objects.exclude(parent_uuid="").held().values_list("parent_uuid", flat=True)
    )
    return Device.objects.filter(uuid__in=parents, parent_uuid="").order_by("name").first()


def partition_utils(gpu: Device) -> list[int]:
    return sorted(
        DeviceTelemetry.objects.filter(parent_uuid=gpu.uuid).values_list("gpu_util", flat=True)
    )


def test_the_simulation_reads_a_gpu_with_partitions_in_use_as_nvml_does_in_mig_mode(mig_gpu):
    parent = DeviceTelemetry.objects.get(pool_name=mig_gpu.pool_name, device_name=mig_gpu.name)
    partitions = DeviceTelemetry.objects.filter(parent_uuid=mig_gpu.uuid)

    assert parent.gpu_util is None and parent.mem_copy_util is None
    assert parent.power_w is not None and parent.temperature_c is not None
    assert parent.fb_used_mib == sum(p.fb_used_mib for p in partitions)
    # NVML has no power or temperature of a MIG device: its GPU carries them.
    assert partitions.exists() and not partitions.exclude(power_w=None).exists()


def test_the_node_page_shows_a_mig_gpus_partitions_instead_of_a_figure_of_its_own(
    client_as, bob, mig_gpu
):
    utils = partition_utils(mig_gpu)

    page = client_as(bob).get(f"/nodes/{mig_gpu.node_name}/").content.decode()

    row = page.split(f">{mig_gpu.name}</a>", 1)[1].split("</tr>", 1)[0]
    span = f"{utils[0]} %" if utils[0] == utils[-1] else f"{utils[0]}–{utils[-1]} %"
    plural = "s" if len(utils) != 1 else ""
    assert (
        f'MIG mode ·</span> <span class="text-nowrap">{len(utils)} partition{plural}: {span}' in row
    )
    assert 'aria-label="GPU utilisation of' not in row  # no bar of its own


def test_the_device_page_and_api_say_what_the_parent_figure_is(client_as, bob, mig_gpu):
    utils = partition_utils(mig_gpu)
    url = f"/api/v1/devices/{mig_gpu.driver}/{mig_gpu.pool_name}/{mig_gpu.name}/utilisation/"

    page = client_as(bob).get(mig_gpu.get_absolute_url()).content.decode()
    latest = client_as(bob).get(url).json()["latest"]

    assert "not reported in MIG mode" in page
    assert f'data-testid="partition-load">{len(utils)} partition' in page
    assert latest["gpu_util"] is None
    assert latest["partitions"] == {
        "count": len(utils),
        "gpu_util_min": utils[0],
        "gpu_util_max": utils[-1],
    }


def test_the_topology_drawing_labels_a_mig_gpu_instead_of_an_idle_figure(client_as, bob, mig_gpu):
    page = client_as(bob).get(f"/nodes/{mig_gpu.node_name}/topology/").content.decode()

    assert "GPU utilisation MIG mode" in page


def test_a_stale_mig_gpu_says_both(client_as, bob, mig_gpu):
    DeviceTelemetry.objects.update(sampled_at=timezone.now() - datetime.timedelta(minutes=10))

    page = client_as(bob).get(f"/nodes/{mig_gpu.node_name}/topology/").content.decode()

    assert "GPU utilisation stale (MIG mode)" in page
