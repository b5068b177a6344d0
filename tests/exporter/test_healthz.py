"""``/healthz``: 200 while NVML is initialised, 503 with the reason otherwise."""

from __future__ import annotations

from collections.abc import Callable

from exporter.nvml import NvmlReader
from harness.fake_nvml import NVML_ERROR_DRIVER_NOT_LOADED, FakeNvml, mixed_node
from tests.exporter.conftest import HOSTNAME, PROC_ROOT, FakeClock
from tests.exporter.loopback import get


def test_it_answers_200_when_nvml_is_initialised(
    reader: NvmlReader, serve: Callable[[NvmlReader], str]
) -> None:
    assert get(f"{serve(reader)}/healthz")[::2] == (200, "ok\n")


def test_it_answers_503_with_the_reason_and_recovers_when_the_driver_loads(
    serve: Callable[[NvmlReader], str], clock: FakeClock
) -> None:
    fake: FakeNvml = mixed_node()
    fake.init_error = NVML_ERROR_DRIVER_NOT_LOADED
    reader = NvmlReader(hostname=HOSTNAME, library=fake, proc_root=PROC_ROOT, clock=clock)
    url = serve(reader)

    status, _, body = get(f"{url}/healthz")
    assert (status, body) == (503, "nvmlInit failed: Driver Not Loaded\n")
    metrics = get(f"{url}/metrics")[2]
    assert 'dra_exporter_nvml_up{Hostname="gpu-node-01"} 0.0' in metrics
    assert "DCGM_FI_DEV" not in metrics

    fake.init_error = None
    assert get(f"{url}/healthz")[0] == 503  # retried at most every 10 s
    assert fake.calls["nvmlInit"] == 1

    clock.now += 10
    assert get(f"{url}/healthz")[::2] == (200, "ok\n")
    assert "DCGM_FI_DEV_FB_USED" in get(f"{url}/metrics")[2]


def test_devices_says_why_nvml_is_unusable(
    serve: Callable[[NvmlReader], str], clock: FakeClock
) -> None:
    fake = mixed_node()
    fake.init_error = NVML_ERROR_DRIVER_NOT_LOADED
    reader = NvmlReader(hostname=HOSTNAME, library=fake, proc_root=PROC_ROOT, clock=clock)

    status, _, body = get(f"{serve(reader)}/devices")

    assert status == 200
    assert '"error": "nvmlInit failed: Driver Not Loaded"' in body


def test_an_unknown_path_is_404(reader: NvmlReader, serve: Callable[[NvmlReader], str]) -> None:
    assert get(f"{serve(reader)}/nope")[0] == 404
