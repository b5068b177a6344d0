"""``manage.py load_fixtures [PATH ...]``: put kubectl ``List`` fixtures into the configured
cluster (``KUBE_API_SERVER`` / ``KUBECONFIG`` / in-cluster, or ``--kubeconfig``), in the order
their references need, statuses included (``mirror.fixture_loader``). Safe to run twice:
objects that exist are left alone. Exits 1 when anything could not be loaded."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import ClusterError
from mirror.fixture_loader import load_fixtures, read_fixture_files
from portal.cluster import cluster_config

DEFAULT_FIXTURES = Path(settings.BASE_DIR) / "devices" / "fixtures"


class Command(BaseCommand):
    help = "Load kubectl List fixtures (default: devices/fixtures) into the configured cluster."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paths", nargs="*", help="files or directories (devices/fixtures)")
        parser.add_argument("--kubeconfig", help="use this kubeconfig instead of the settings'")
        parser.add_argument("--context", help="the kubeconfig context to use")

    def handle(self, *args: Any, **options: Any) -> None:
        paths = options["paths"] or [DEFAULT_FIXTURES]
        missing = [str(p) for p in paths if not Path(p).exists()]
        if missing:
            raise CommandError(f"no such file or directory: {', '.join(missing)}")
        if options["kubeconfig"]:
            config = ClusterConfig(kubeconfig=options["kubeconfig"], context=options["context"])
        else:
            config = cluster_config()
        objects = read_fixture_files(paths)
        try:
            with Cluster(config) as cluster:
                report = load_fixtures(cluster, objects)
        except ClusterError as error:
            raise CommandError(f"cannot load the fixtures: {error.message}") from error
        self.stdout.write(
            f"{len(report.created)} created, {len(report.statuses)} statuses written, "
            f"{len(report.existing)} already there"
        )
        for skipped in report.skipped:
            self.stdout.write(f"skipped (a kind this command does not load): {skipped}")
        for problem in report.problems:
            self.stderr.write(problem)
        if not report.ok:
            raise CommandError(f"{len(report.problems)} object(s) not loaded", returncode=1)
