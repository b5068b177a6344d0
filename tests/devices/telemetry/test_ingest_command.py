"""``manage.py telemetry_ingest`` runs one cycle now, by hand, through the ingest service."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from devices.models import DeviceTelemetry, TelemetrySource

pytestmark = pytest.mark.usefixtures("mirrored_cluster")


def run(*args: str) -> tuple[str, str]:
    out, err = StringIO(), StringIO()
    call_command("telemetry_ingest", *args, stdout=out, stderr=err)
    return out.getvalue(), err.getvalue()


def test_it_runs_every_enabled_source_now_whether_or_not_it_is_due(http_server, exporter_routes):
    # Both just ran a cycle: the beat task would skip them for another interval.
    now = timezone.now()
    simulated = TelemetrySource.objects.create(name="demo", kind="simulated", last_attempt_at=now)
    TelemetrySource.objects.create(
        name="exporters",
        kind="exporters",
        exporter_targets=[http_server(exporter_routes)],
        last_attempt_at=now,
    )
    TelemetrySource.objects.create(name="off", kind="simulated", enabled=False)

    out, _ = run()

    simulated.refresh_from_db()
    assert simulated.last_success_at is not None and simulated.last_sample_count > 0
    assert f"demo: {simulated.last_sample_count} samples, 0 unmatched" in out
    assert "exporters: 5 samples, 0 unmatched" in out
    assert "off" not in out


def test_it_runs_a_named_source_even_a_disabled_one():
    TelemetrySource.objects.create(name="demo", kind="simulated")
    TelemetrySource.objects.create(name="trial", kind="simulated", enabled=False)

    out, _ = run("--source", "trial")

    assert out.startswith("trial (disabled): ") and "demo" not in out


def test_an_unknown_source_is_refused_with_the_known_names():
    TelemetrySource.objects.create(name="demo", kind="simulated")

    with pytest.raises(CommandError, match=r"No telemetry source named nope \(sources: demo\)"):
        run("--source", "nope")


def test_a_failing_source_fails_the_command_after_the_others_ran(http_server):
    TelemetrySource.objects.create(
        name="down", kind="exporters", exporter_targets=[http_server({})]
    )
    TelemetrySource.objects.create(name="demo", kind="simulated")

    err = StringIO()
    with pytest.raises(CommandError, match=r"1 of 2 failed: down\."):
        call_command("telemetry_ingest", stdout=StringIO(), stderr=err)

    assert "down: every exporter failed" in err.getvalue()
    assert DeviceTelemetry.objects.filter(source__name="demo").exists()


def test_without_any_enabled_source_it_says_where_to_add_one():
    with pytest.raises(CommandError, match="No enabled telemetry source: add one in the admin"):
        run()
