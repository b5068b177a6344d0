"""``make demo``: the demo users, then the portal served on one port, in one process."""

from __future__ import annotations

from typing import Any

from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Seed the demo personas and serve the portal (the embedded, one-command mode)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default=8000, type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("seed_demo", stdout=self.stdout)
        call_command("runserver", f"{options['host']}:{options['port']}", use_reloader=False)
