"""``make demo``: the embedded mode in one process.

Seeds the demo personas; unless a real cluster is configured (``KUBE_API_SERVER`` or
``KUBECONFIG``), starts the API emulator loaded with ``devices/fixtures`` (two DGX H100, a DGX
A100 with MIG partitions, the dra-example-driver node, a legacy device-plugin node, their
classes and claims) with the simulated scheduler that places its pods (``demo/scheduler.py``);
starts one watcher thread per kind, the beat's lifecycle tasks in a thread, and a simulated
telemetry source (readings labelled *simulated* everywhere); then serves the portal.
"""

from __future__ import annotations

import logging
import os
import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import close_old_connections

from claims.requests.specs import SpecErrors
from claims.usage.idle import sweep_idle_claims
from claims.usage.utilisation import roll_up_usage
from demo.data import DEMO_CLASS_POLICIES, DEMO_PENDING, seed_class_policies, seed_governance
from demo.scheduler import start_simulated_scheduler
from devices.models import Device, DeviceClass, TelemetrySource
from devices.telemetry.ingest import backfill_simulated_history, ingest_source, prune, roll_up
from mirror.watchers import start_watchers
from portal.celery import start_embedded_beat

logger = logging.getLogger(__name__)

FIXTURES = Path(settings.BASE_DIR) / "devices" / "fixtures"
# Namespaces and nodes first, so they keep their labels when the claims and slices arrive.
FIXTURE_ORDER = ["namespaces.json", "nodes.json"]
DEMO_TELEMETRY_SOURCE = "demo-simulated"

# Beat entries the demo runs its own way: telemetry, usage rollups and the idle sweep follow the
# simulated source (``_simulate_telemetry``). The rest (leases, request
# sync and resume, quota alarms, backstops, webhooks) run on the embedded beat.
EMBEDDED_BEAT_SKIP = frozenset(
    {
        "telemetry-ingest",
        "telemetry-roll-up",
        "telemetry-prune",
        "claims-roll-up-usage",
        "claims-sweep-idle",
    }
)


class Command(BaseCommand):
    help = "Seed the demo personas, start the demo cluster and the watchers, serve the portal."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default=8000, type=int)
        parser.add_argument(
            "--emulator-port",
            default=8001,
            type=int,
            help="The demo cluster's port on 127.0.0.1 (make demo EMULATOR_PORT=...).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if "PORTAL_URL" not in os.environ:
            # Links in the demo's emails and webhooks lead to where it serves (make demo PORT=).
            settings.PORTAL_URL = f"http://{options['host']}:{options['port']}"
        call_command("seed_demo", stdout=self.stdout)
        self._seed_class_policies()
        stop = threading.Event()
        if not (settings.KUBE_API_SERVER or settings.KUBECONFIG):
            server = self._start_emulator(options["emulator_port"])
            # The emulator has no kube-scheduler: without this, claims stay unallocated.
            start_simulated_scheduler(server, stop)
            self.stdout.write(
                "The demo cluster's scheduler is simulated: demo/scheduler.py allocates claims "
                "with the portal's allocator and binds pods (not a real kube-scheduler)."
            )
        start_watchers(stop)
        start_embedded_beat(stop, skip=EMBEDDED_BEAT_SKIP)
        threading.Thread(
            target=self._seed_governance, args=(stop,), daemon=True, name="demo-governance"
        ).start()
        threading.Thread(
            target=self._simulate_telemetry, args=(stop,), daemon=True, name="demo-telemetry"
        ).start()
        self.stdout.write(
            self.style.SUCCESS(
                f"Watching {settings.KUBE_API_SERVER or settings.KUBECONFIG}; the portal is at "
                f"http://{options['host']}:{options['port']}/"
            )
        )
        try:
            call_command("runserver", f"{options['host']}:{options['port']}", use_reloader=False)
        finally:
            stop.set()

    def _seed_class_policies(self) -> None:
        seed_class_policies()
        modes = ", ".join(f"{name}: {mode}" for name, mode in DEMO_CLASS_POLICIES)
        self.stdout.write(f"Allocation modes by device class ({modes}); others: scheduler.")

    def _seed_governance(self, stop: threading.Event) -> None:
        """Once the mirror holds the device classes: ``demo.data.seed_governance``
        (team-a's backstop, bob's request waiting for alice)."""
        for _ in range(120):
            if stop.is_set():
                return
            if DeviceClass.objects.filter(name=DEMO_PENDING.device_class_name).exists():
                break
            stop.wait(0.5)
        else:
            logger.warning("The demo's device classes never arrived; nothing pending is seeded.")
            return
        try:
            request = seed_governance()
        except SpecErrors as error:
            logger.warning("The demo's pending request was refused: %s", error.errors)
            return
        if request is not None:
            self.stdout.write(
                f"Bob asked for 3 H100s for 5 days: {request.get_state_display().lower()} "
                "(sign in as alice and open Approvals)."
            )

    def _simulate_telemetry(self, stop: threading.Event) -> None:
        """No GPU in the demo: a simulated telemetry source (every page labels its readings
        *simulated*) read every 15 s, with a day of made-up history, rolled up and pruned, and
        idle claims found, as the beat tasks do in production."""
        for _ in range(120):
            if stop.is_set():
                return
            if Device.objects.exclude(uuid="").exists():
                break
            stop.wait(0.5)
        else:
            logger.warning("The demo's devices never arrived; no simulated telemetry.")
            return
        source, created = TelemetrySource.objects.get_or_create(
            name=DEMO_TELEMETRY_SOURCE, defaults={"kind": TelemetrySource.Kind.SIMULATED}
        )
        ingest_source(source, force=True)
        if created:
            rows = backfill_simulated_history(source)
            self.stdout.write(f"Simulated GPU telemetry: {rows} rollups of the last 24 h.")
        roll_up_usage()  # the claims' share of that history, before anyone opens a claim
        sweep_idle_claims()  # the simulation's idle holders are idle at once: a day of history
        cycles = 0
        while not stop.wait(source.interval_seconds):
            try:
                ingest_source(source)
                cycles += 1
                if cycles % 4 == 0:
                    roll_up()
                    roll_up_usage()
                if cycles % 8 == 0:
                    sweep_idle_claims()  # reclaim stays off unless a tenant's policy turns it on
                if cycles % 40 == 0:
                    prune()
            except Exception:  # the demo goes on without readings rather than stop
                logger.exception("simulated telemetry failed; trying again next cycle")
            finally:
                close_old_connections()

    def _start_emulator(self, port: int) -> str:
        """Starts the demo cluster; returns its URL (also set as ``KUBE_API_SERVER``)."""
        from apiemulator import Emulator  # the demo's stand-in cluster, never used in production

        try:
            emulator = Emulator(port=port, bookmark_interval=5.0).start()
        except OSError as error:
            raise CommandError(
                f"The demo cluster cannot listen on 127.0.0.1:{port} ({error.strerror}): "
                "choose another port with `make demo EMULATOR_PORT=...` "
                "(or `manage.py demo --emulator-port`)."
            ) from error
        files = [FIXTURES / name for name in FIXTURE_ORDER] + sorted(
            path for path in FIXTURES.glob("*.json") if path.name not in FIXTURE_ORDER
        )
        count = emulator.load_files(files)
        kubeconfig = emulator.kubeconfig(settings.VAR_DIR / "demo-kubeconfig")
        settings.KUBE_API_SERVER = emulator.url
        self.stdout.write(
            f"Demo cluster (API emulator) at {emulator.url} with {count} objects; "
            f"kubectl --kubeconfig {kubeconfig} get resourceslices"
        )
        return emulator.url
