"""A GPU process's pod and container come from its cgroup (host PIDs, hostPID: true)."""

from __future__ import annotations

from pathlib import Path

from exporter.processes import container_of
from tests.exporter.conftest import PROC_ROOT


def test_it_reads_a_systemd_cgroup_path() -> None:
    assert container_of(4242, PROC_ROOT) == (
        "3f1c2b7a-9d4e-4c1a-8b2f-6e5d4c3b2a19",
        "8b1e4c0f2a6d9e3b7c5a1f0e8d2c4b6a9f3e1d7c5b0a2e4f6d8c1b3a5e7f9d0c",
    )


def test_it_reads_a_cgroupfs_path() -> None:
    pod_uid, container_id = container_of(5151, PROC_ROOT)
    assert pod_uid == "0a9b8c7d-6e5f-4a3b-2c1d-0e9f8a7b6c5d"
    assert container_id.startswith("4f2e1d0c")


def test_a_process_outside_any_pod_or_gone_has_no_ids(tmp_path: Path) -> None:
    (tmp_path / "7").mkdir()
    (tmp_path / "7" / "cgroup").write_text("0::/system.slice/sshd.service\n")
    assert container_of(7, tmp_path) == ("", "")
    assert container_of(8, tmp_path) == ("", "")
