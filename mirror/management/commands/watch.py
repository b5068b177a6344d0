"""``manage.py watch``: the mirror's watcher process (the ``watchers`` Deployment, two replicas).

A thread per kind (``mirror.watchers.keep_watching``): the process that holds a kind's Redis
lock mirrors it, the other replica stands by and takes the kind within ``WATCHER_LOCK_TTL`` +
``WATCHER_STANDBY_SECONDS`` when the holder dies. SIGTERM (a rollout, a drained node) stops the
reflectors, releases the locks (the other replica takes over within a poll) and exits 0.

``--alive-file PATH`` is touched every few seconds while every kind's thread runs: the
liveness probe checks its age. ``METRICS_PORT`` serves the process's metrics (mirror batches,
events, lag) under the same access rule as the web's ``/metrics``.
"""

from __future__ import annotations

import signal
import threading
import time
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.kinds import Kind
from mirror.mapping import MIRRORED_KINDS
from mirror.watchers import start_watchers
from portal.metrics import start_metrics_server

# How often the alive file is touched; the probe allows several missed touches.
ALIVE_EVERY_SECONDS = 5.0


class Command(BaseCommand):
    help = "Run the cluster mirror's watchers (one active per kind across replicas)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--kind",
            action="append",
            default=[],
            choices=[kind.value for kind in MIRRORED_KINDS],
            metavar="KIND",
            help="Mirror only this kind (repeat for several; default: every kind).",
        )
        parser.add_argument(
            "--alive-file",
            default="",
            metavar="PATH",
            help="Touched every 5 s while every kind's thread runs (for a liveness probe).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        kinds = [Kind(value) for value in options["kind"]] or list(MIRRORED_KINDS)
        alive = Path(options["alive_file"]) if options["alive_file"] else None
        stop = threading.Event()

        def stop_on(signum: int, frame: Any) -> None:
            self.stdout.write(f"{signal.Signals(signum).name}: handing the kinds over")
            stop.set()

        signal.signal(signal.SIGTERM, stop_on)
        signal.signal(signal.SIGINT, stop_on)
        if settings.METRICS_PORT:
            start_metrics_server(settings.METRICS_PORT)
        threads = start_watchers(stop, kinds)
        self.stdout.write(f"Watching {', '.join(kind.value for kind in kinds)}")
        if alive is not None:
            alive.touch()
        while not stop.wait(ALIVE_EVERY_SECONDS):
            if not all(thread.is_alive() for thread in threads):
                raise CommandError("a watcher thread ended; exiting so the pod is restarted")
            if alive is not None:
                alive.touch()
        deadline = time.monotonic() + 30
        for thread in threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        self.stdout.write("Stopped")
