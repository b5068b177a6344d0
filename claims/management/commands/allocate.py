"""``manage.py allocate``: the allocator contract over JSON Lines (DESIGN §5).

Reads one case per line from stdin (or ``--input FILE``) and writes one JSON line per case to
stdout. A line that is not valid JSON yields an error line (name null) and processing
continues. Touches no database: it only calls the pure allocator.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dra.allocator import DEFAULT_TIMEOUT_SECONDS, run_case

MAX_JSON_DEPTH = 100
_STRINGS = re.compile(r'"(?:[^"\\]|\\.)*"')
_NOT_BRACKETS = re.compile(r"[^\[\]{}]+")
_INNERMOST = re.compile(r"\[\]|\{\}")


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
        path = options.get("input")
        timeout = options.get("timeout", DEFAULT_TIMEOUT_SECONDS)
        stream = open(path, encoding="utf-8") if path else sys.stdin  # noqa: SIM115
        try:
            for line in stream:
                if not line.strip():
                    continue
                self.stdout.write(_answer(line, timeout))
                self.stdout.flush()
        finally:
            if path:
                stream.close()


def _answer(line: str, timeout: float) -> str:
    """The output line for one input line, whatever the line holds."""
    output = _run_line(line, timeout)
    try:
        return json.dumps(output, separators=(",", ":"))
    except (ValueError, TypeError, RecursionError) as error:
        name = output.get("name")
        fallback = {
            "name": name if isinstance(name, str | int | float | bool) else None,
            "status": "error",
            "error": f"internal error: the output could not be written: {error!r}",
        }
        return json.dumps(fallback, separators=(",", ":"))


def _nests_too_deep(line: str) -> bool:
    """Whether the JSON text nests deeper than MAX_JSON_DEPTH, found without recursing: strip
    strings and everything but brackets, then peel innermost pairs one level per pass."""
    brackets = _NOT_BRACKETS.sub("", _STRINGS.sub("", line))
    for _ in range(MAX_JSON_DEPTH):
        if not brackets:
            return False
        peeled = _INNERMOST.sub("", brackets)
        if peeled == brackets:
            return False  # unbalanced: json.loads reports it
        brackets = peeled
    return bool(brackets)


def _run_line(line: str, timeout: float) -> dict[str, Any]:
    if _nests_too_deep(line):
        return {
            "name": None,
            "status": "error",
            "error": f"invalid JSON: nested deeper than {MAX_JSON_DEPTH} levels",
        }
    try:
        case = json.loads(line)
    except (json.JSONDecodeError, RecursionError) as error:
        return {"name": None, "status": "error", "error": f"invalid JSON: {error}"}
    try:
        return run_case(case, timeout)
    except Exception as error:  # one broken case must not stop the stream  # noqa: BLE001
        name = case.get("name") if isinstance(case, dict) else None
        return {"name": name, "status": "error", "error": f"internal error: {error!r}"}
