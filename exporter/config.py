"""The exporter's settings: command-line flags, each defaulting to an environment variable.

| flag | env | default |
| --- | --- | --- |
| ``--host`` | ``EXPORTER_HOST`` | ``0.0.0.0`` (scraped over the pod network) |
| ``--port`` | ``EXPORTER_PORT`` | ``9400`` (dcgm-exporter's port) |
| ``--hostname`` | ``NODE_NAME`` | the machine's host name; the ``Hostname`` label |
| ``--slow-call-ttl`` | ``EXPORTER_SLOW_CALL_TTL`` | ``300`` seconds |
| ``--proc-root`` | ``EXPORTER_PROC_ROOT`` | ``/proc`` (where process cgroups are read) |
"""

from __future__ import annotations

import argparse
import os
import socket
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Config", "parse_config"]


@dataclass(frozen=True)
class Config:
    host: str
    port: int
    hostname: str
    slow_call_ttl: float
    proc_root: Path


def parse_config(
    argv: Sequence[str] | None = None, environ: Mapping[str, str] | None = None
) -> Config:
    """Flags win over the environment; a malformed number exits with argparse's message."""
    env = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(
        prog="python -m exporter", description="NVML exporter for DRA Portal GPU nodes."
    )
    parser.add_argument("--host", default=env.get("EXPORTER_HOST", "0.0.0.0"))  # noqa: S104
    parser.add_argument("--port", type=int, default=env.get("EXPORTER_PORT", "9400"))
    parser.add_argument("--hostname", default=env.get("NODE_NAME") or socket.gethostname())
    parser.add_argument(
        "--slow-call-ttl",
        type=float,
        default=env.get("EXPORTER_SLOW_CALL_TTL", "300"),
        help="seconds to keep name, UUID, PCI info, MIG layout, NVLink peers and topology",
    )
    parser.add_argument("--proc-root", type=Path, default=env.get("EXPORTER_PROC_ROOT", "/proc"))
    args = parser.parse_args(argv)
    if not 0 < args.port < 65536:
        parser.error(f"--port must be 1-65535, not {args.port}")
    if args.slow_call_ttl < 0:
        parser.error("--slow-call-ttl must not be negative")
    return Config(
        host=args.host,
        port=args.port,
        hostname=args.hostname,
        slow_call_ttl=args.slow_call_ttl,
        proc_root=args.proc_root,
    )
