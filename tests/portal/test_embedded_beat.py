"""The embedded mode's beat: with no beat process, a thread sends the schedule's tasks at
their intervals (the demo's requests follow their claims, leases end, stuck requests resume)."""

from __future__ import annotations

import threading
import time

from claims.lifecycle import beat
from portal.celery import start_embedded_beat


def test_it_runs_each_entry_at_its_interval_and_outlives_a_failing_task(monkeypatch):
    ran: list[str] = []
    monkeypatch.setattr(beat, "expire_leases", lambda: ran.append("leases") or 0)

    def broken() -> list[str]:
        ran.append("resume")
        raise RuntimeError("the database went away")

    monkeypatch.setattr(beat, "resume_requests", broken)
    schedule = {
        "expire-claim-leases": {"task": "claims.expire_leases", "schedule": 0.05},
        "resume-claim-requests": {"task": "claims.resume_requests", "schedule": 0.05},
        "telemetry-ingest": {"task": "devices.tasks.telemetry_ingest", "schedule": 0.05},
    }
    stop = threading.Event()
    thread = start_embedded_beat(stop, skip={"telemetry-ingest"}, schedule=schedule, tick=0.01)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and min(ran.count("leases"), ran.count("resume")) < 3:
        time.sleep(0.02)
    stop.set()
    thread.join(timeout=5)
    assert not thread.is_alive()
    assert ran.count("leases") >= 3 and ran.count("resume") >= 3
    assert set(ran) == {"leases", "resume"}  # the skipped entry never ran
