"""``make demo``: the embedded mode in one process.

Seeds the demo personas; unless a real cluster is configured (``KUBE_API_SERVER`` or
``KUBECONFIG``), starts the API emulator loaded with ``devices/fixtures`` (two DGX H100, a DGX
A100 with MIG partitions, the dra-example-driver node, a legacy device-plugin node, their
classes and claims) with the simulated scheduler that places its pods (``home/scheduler.py``);
starts one watcher thread per kind; then serves the portal.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser

from claims.models import AllocationMode, ClassPolicy
from claims.services import save_class_policy
from home.scheduler import start_simulated_scheduler
from mirror.watchers import start_embedded_watchers

FIXTURES = Path(settings.BASE_DIR) / "devices" / "fixtures"
# Namespaces and nodes first, so they keep their labels when the claims and slices arrive.
FIXTURE_ORDER = ["namespaces.json", "nodes.json"]


DEMO_CLASS_POLICIES = [
    ("gpu.nvidia.com", AllocationMode.RESERVATION),
    ("mig.nvidia.com", AllocationMode.SCHEDULER),
]


class Command(BaseCommand):
    help = "Seed the demo personas, start the demo cluster and the watchers, serve the portal."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="127.0.0.1")
        parser.add_argument("--port", default=8000, type=int)
        parser.add_argument("--emulator-port", default=8001, type=int)

    def handle(self, *args: Any, **options: Any) -> None:
        call_command("seed_demo", stdout=self.stdout)
        self._seed_class_policies()
        stop = threading.Event()
        if not (settings.KUBE_API_SERVER or settings.KUBECONFIG):
            server = self._start_emulator(options["emulator_port"])
            # The emulator has no kube-scheduler: without this, claims stay unallocated.
            start_simulated_scheduler(server, stop)
            self.stdout.write(
                "The demo cluster's scheduler is simulated: home/scheduler.py allocates claims "
                "with the portal's allocator and binds pods (not a real kube-scheduler)."
            )
        start_embedded_watchers(stop)
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
        """Both allocation modes in the demo: whole H100s are reserved by the portal for the
        lease; MIG slices and the example driver's GPUs go to the (simulated) scheduler.
        A policy an admin already set is kept."""
        for device_class, mode in DEMO_CLASS_POLICIES:
            if not ClassPolicy.objects.filter(device_class_name=device_class).exists():
                save_class_policy(actor=AnonymousUser(), device_class_name=device_class, mode=mode)
        modes = ", ".join(f"{name}: {mode}" for name, mode in DEMO_CLASS_POLICIES)
        self.stdout.write(f"Allocation modes by device class ({modes}); others: scheduler.")

    def _start_emulator(self, port: int) -> str:
        """Starts the demo cluster; returns its URL (also set as ``KUBE_API_SERVER``)."""
        from apiemulator import Emulator  # the demo's stand-in cluster, never used in production

        emulator = Emulator(port=port, bookmark_interval=5.0).start()
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
