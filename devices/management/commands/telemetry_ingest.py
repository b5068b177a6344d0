"""``manage.py telemetry_ingest``: one ingest cycle, now, by hand.

What the ``devices.tasks.telemetry_ingest`` beat task does every few seconds for the sources
that are due, for an operator: every enabled source (or the ones named, enabled or not, to try
one before enabling it), whether or not its interval has passed, through the same service
(``devices.telemetry.ingest.ingest_source``), which records the cycle on the source as the
task's cycles are (the Telemetry page shows it). A source that fails as a whole fails the
command (exit status 1) after the others have run; an exporter among several that fails is
reported and the command succeeds, as the cycle does.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from devices.models import TelemetrySource
from devices.telemetry.ingest import ingest_source


class Command(BaseCommand):
    help = "Run one telemetry ingest cycle now: every enabled source, or those named."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--source",
            action="append",
            default=[],
            metavar="NAME",
            help="A source to run, enabled or not (repeatable); default: every enabled one.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        sources = self._sources(options["source"])
        failed = []
        for source in sources:
            result = ingest_source(source, force=True)
            state = "" if source.enabled else " (disabled)"
            if result.failed:
                failed.append(source.name)
                self.stderr.write(self.style.ERROR(f"{source.name}{state}: {result.error}"))
                continue
            line = f"{source.name}{state}: {result.samples} samples, {result.unmatched} unmatched"
            if result.error:
                self.stdout.write(self.style.WARNING(f"{line}; {result.error}"))
            else:
                self.stdout.write(self.style.SUCCESS(line))
        if failed:
            raise CommandError(f"{len(failed)} of {len(sources)} failed: {', '.join(failed)}.")

    def _sources(self, names: list[str]) -> list[TelemetrySource]:
        if not names:
            sources = list(TelemetrySource.objects.filter(enabled=True))
            if not sources:
                raise CommandError(
                    "No enabled telemetry source: add one in the admin (Telemetry sources), "
                    "or name one with --source."
                )
            return sources
        found = {s.name: s for s in TelemetrySource.objects.filter(name__in=names)}
        unknown = [name for name in names if name not in found]
        if unknown:
            known = ", ".join(TelemetrySource.objects.values_list("name", flat=True)) or "none"
            raise CommandError(
                f"No telemetry source named {', '.join(unknown)} (sources: {known})."
            )
        return [found[name] for name in dict.fromkeys(names)]
