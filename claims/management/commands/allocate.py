"""``manage.py allocate``: the allocator contract over JSON Lines (DESIGN §5).

Reads one case per line from stdin (or ``--input FILE``) and writes one JSON line per case to
stdout. A line that is not valid JSON yields an error line (name null) and processing
continues. Touches no database: it only calls the pure allocator.
"""

from __future__ import annotations

import json
import sys
from typing import Any

from django.core.management.base import BaseCommand, CommandParser

from dra.allocator import run_case


class Command(BaseCommand):
    help = (
        "Allocate DRA claims for JSON Lines cases (stdin or --input) and print one result per line."
    )
    requires_system_checks: list[str] = []
    requires_migrations_checks = False

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--input", help="read cases from this file instead of stdin")

    def handle(self, *args: Any, **options: Any) -> None:
        path = options.get("input")
        stream = open(path, encoding="utf-8") if path else sys.stdin  # noqa: SIM115
        try:
            for line in stream:
                if not line.strip():
                    continue
                self.stdout.write(json.dumps(_run_line(line), separators=(",", ":")))
                self.stdout.flush()
        finally:
            if path:
                stream.close()


def _run_line(line: str) -> dict[str, Any]:
    try:
        case = json.loads(line)
    except json.JSONDecodeError as error:
        return {"name": None, "status": "error", "error": f"invalid JSON: {error}"}
    try:
        return run_case(case)
    except Exception as error:  # one broken case must not stop the stream  # noqa: BLE001
        name = case.get("name") if isinstance(case, dict) else None
        return {"name": name, "status": "error", "error": f"internal error: {error!r}"}
