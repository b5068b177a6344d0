"""``manage.py demo`` runs the simulated scheduler only next to its own demo cluster."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from claims.models import ClassPolicy
from demo.management.commands import demo
from portal.celery import app


@pytest.fixture
def beat_skips(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The entries each embedded beat the command started leaves to the demo's own loops."""
    started: list[set[str]] = []
    monkeypatch.setattr(demo, "start_embedded_beat", lambda stop, skip: started.append(set(skip)))
    return started


@pytest.fixture
def started_schedulers(
    monkeypatch: pytest.MonkeyPatch, db: None, beat_skips: list[set[str]]
) -> list[str]:
    """Runs the command without serving, seeding, watching, a beat, telemetry or a real emulator;
    returns the servers a simulated scheduler was started for."""
    started: list[str] = []
    monkeypatch.setattr(demo, "call_command", lambda *args, **kwargs: None)
    monkeypatch.setattr(demo, "start_watchers", lambda stop: [])
    monkeypatch.setattr(
        demo, "start_simulated_scheduler", lambda server, stop: started.append(server)
    )
    monkeypatch.setattr(
        demo.Command, "_start_emulator", lambda self, port: f"http://127.0.0.1:{port}"
    )
    # Their threads would outlive the test and reach for its database.
    monkeypatch.setattr(demo.Command, "_seed_governance", lambda self, stop: None)
    monkeypatch.setattr(demo.Command, "_simulate_telemetry", lambda self, stop: None)
    return started


def test_the_demo_cluster_gets_the_simulated_scheduler_and_says_so(
    started_schedulers: list[str], settings
) -> None:
    settings.KUBE_API_SERVER = settings.KUBECONFIG = ""
    out = StringIO()

    call_command("demo", "--emulator-port", "8123", stdout=out)

    assert started_schedulers == ["http://127.0.0.1:8123"]
    assert "The demo cluster's scheduler is simulated" in out.getvalue()


def test_a_real_cluster_gets_no_simulated_scheduler(
    started_schedulers: list[str], settings
) -> None:
    settings.KUBE_API_SERVER = "https://cluster.example:6443"
    out = StringIO()

    call_command("demo", stdout=out)

    assert started_schedulers == []
    assert "simulated" not in out.getvalue()


def test_the_demo_offers_both_allocation_modes_and_keeps_an_admins_choice(
    started_schedulers: list[str], settings
) -> None:
    settings.KUBE_API_SERVER = settings.KUBECONFIG = ""
    ClassPolicy.objects.create(device_class_name="mig.nvidia.com", mode="reservation")

    call_command("demo", stdout=StringIO())

    modes = dict(ClassPolicy.objects.values_list("device_class_name", "mode"))
    assert modes == {"gpu.nvidia.com": "reservation", "mig.nvidia.com": "reservation"}


def test_the_demo_runs_the_lifecycle_beat_tasks_in_process(
    started_schedulers: list[str], beat_skips: list[set[str]], settings
) -> None:
    settings.KUBE_API_SERVER = settings.KUBECONFIG = ""

    call_command("demo", stdout=StringIO())

    [skip] = beat_skips
    runs = {entry["task"] for name, entry in app.conf.beat_schedule.items() if name not in skip}
    assert {
        "claims.sync_requests",
        "claims.expire_leases",
        "claims.resume_requests",
        "notifications.quota_high",
        "notifications.lease_expiring",
    } <= runs
    # Its telemetry is simulated by the demo itself.
    assert "devices.tasks.telemetry_ingest" not in runs


def test_the_demos_links_lead_to_where_it_serves(
    started_schedulers: list[str], settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("PORTAL_URL", raising=False)
    # Set through the fixture, so the demo's own change ends with the test.
    settings.PORTAL_URL = "http://localhost:8000"
    settings.KUBE_API_SERVER = settings.KUBECONFIG = ""

    call_command("demo", "--port", "8050", stdout=StringIO())

    assert settings.PORTAL_URL == "http://127.0.0.1:8050"


def test_a_portal_url_set_by_the_operator_is_kept(
    started_schedulers: list[str], settings, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PORTAL_URL", "https://gpus.example.com")
    settings.PORTAL_URL = "https://gpus.example.com"
    settings.KUBE_API_SERVER = settings.KUBECONFIG = ""

    call_command("demo", "--port", "8050", stdout=StringIO())

    assert settings.PORTAL_URL == "https://gpus.example.com"
