"""``manage.py allocate``: the allocator contract over JSON Lines (DESIGN §5).

Reads one case per line from stdin (or ``--input FILE``) and writes one JSON line per case to
stdout. A line that is not valid JSON yields an error line (name null) and processing
continues. Touches no database: it only calls the pure allocator. ``manage.py`` runs the plain
form (``--input``, ``--timeout``) without starting Django (see
:mod:`claims.capacity.allocation_lines`); this command serves every other form (``--help``, Django's
own options, ``call_command``).
"""

from __future__ import annotations

import argparse
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from claims.capacity.allocation_lines import answer_lines
from dra.allocator import DEFAULT_TIMEOUT_SECONDS


class Command(BaseCommand):
    help = """\
Allocate DRA devices for claims as the kube-scheduler's structured allocator would.

Input: JSON Lines on stdin (or --input FILE), one case per line. A case is an object with
  name               any JSON value, echoed back in the output line
  kubernetesVersion  optional, "1.34" or newer (older clusters lack resource.k8s.io/v1);
                     the newest modelled behaviour when omitted
  features           optional object of booleans: adminAccess, prioritizedList,
                     partitionableDevices, consumableCapacity, deviceTaints,
                     deviceBinding, deviceStatus; omitted ones are off, unknown names
                     are an error
  nodes, deviceClasses, resourceSlices
                     lists of Node, DeviceClass and ResourceSlice objects (resource.k8s.io/v1)
  allocatedClaims    ResourceClaims whose status.allocation already holds devices
  claims             the ResourceClaims to allocate, at least one; all or nothing
  node               a node name, or null to try the nodes in name order

Output: one JSON line per input line, in input order:
  {"name": ..., "status": "allocated", "node": ..., "allocations": [one per claim]}
  {"name": ..., "status": "unsatisfiable"}
  {"name": ..., "status": "error", "error": "what is wrong"}
A line that is not JSON, or nests deeper than 100 levels, gives an error with "name": null;
the following lines still run. Each allocation has a wall-clock limit (--timeout, 10 s by
default); past it the line is an error naming the limit.
Uses no database."""
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def create_parser(self, prog_name: str, subcommand: str, **kwargs: Any) -> CommandParser:
        # Keep the help's own line breaks; the default formatter would reflow them into one block.
        kwargs.setdefault("formatter_class", argparse.RawDescriptionHelpFormatter)
        return super().create_parser(prog_name, subcommand, **kwargs)

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--input", metavar="FILE", help="read cases from this JSON Lines file instead of stdin"
        )
        parser.add_argument(
            "--timeout",
            metavar="SECONDS",
            type=float,
            default=DEFAULT_TIMEOUT_SECONDS,
            help="wall-clock limit of each allocation (default: %(default)g)",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        answer_lines(
            options.get("input"),
            options.get("timeout", DEFAULT_TIMEOUT_SECONDS),
            self.stdout.write,
            self.stdout.flush,
        )
