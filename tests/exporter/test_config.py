"""Flags win over environment variables; the defaults match dcgm-exporter's port."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.config import parse_config


def test_it_reads_the_environment() -> None:
    config = parse_config(
        [],
        {
            "EXPORTER_PORT": "9500",
            "EXPORTER_HOST": "127.0.0.1",
            "NODE_NAME": "dgx-h100-01",
            "EXPORTER_SLOW_CALL_TTL": "60",
            "EXPORTER_PROC_ROOT": "/host/proc",
        },
    )
    assert (config.port, config.host, config.hostname) == (9500, "127.0.0.1", "dgx-h100-01")
    assert (config.slow_call_ttl, config.proc_root) == (60.0, Path("/host/proc"))


def test_flags_win_over_the_environment() -> None:
    config = parse_config(["--port", "9401", "--hostname", "n1"], {"EXPORTER_PORT": "9500"})
    assert (config.port, config.hostname, config.host) == (9401, "n1", "0.0.0.0")  # noqa: S104 (the default)


def test_it_refuses_a_port_out_of_range() -> None:
    with pytest.raises(SystemExit):
        parse_config(["--port", "70000"], {})
