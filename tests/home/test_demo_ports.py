"""``make demo`` moves the demo cluster's port (``EMULATOR_PORT=``) as ``PORT=`` moves the
portal's, and a port that is taken is named with the way to choose another."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
from pathlib import Path

import pytest
from django.core.management.base import CommandError

from demo.management.commands.demo import Command

ROOT = Path(__file__).resolve().parents[2]


def demo_command_line(*arguments: str, env: dict[str, str] | None = None) -> str:
    """The ``manage.py demo`` line ``make demo`` would run (``make -n``: nothing is run)."""
    if shutil.which("make") is None:
        pytest.skip("make is not installed")
    done = subprocess.run(  # noqa: S603 - a fixed command line
        ["make", "-n", "demo", *arguments],  # noqa: S607 - make from PATH, as a person runs it
        cwd=ROOT,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        check=True,
    )
    [line] = [line for line in done.stdout.splitlines() if "manage.py demo" in line]
    return line


def test_make_demo_serves_the_demo_cluster_on_8001_by_default() -> None:
    line = demo_command_line()

    assert line.endswith("manage.py demo --host 127.0.0.1 --port 8000 --emulator-port 8001")


def test_make_demo_moves_the_demo_cluster_with_emulator_port() -> None:
    assert demo_command_line("PORT=9000", "EMULATOR_PORT=9001").endswith(
        "--port 9000 --emulator-port 9001"
    )
    assert demo_command_line(env={"EMULATOR_PORT": "9101"}).endswith("--emulator-port 9101")


def test_a_taken_emulator_port_names_the_way_to_move_it() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]

        with pytest.raises(CommandError, match=f"127.0.0.1:{port}.*EMULATOR_PORT="):
            Command()._start_emulator(port)
