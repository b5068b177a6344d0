"""Celery tasks of telemetry (thin: they call ``devices.telemetry.ingest``); routed to the
``telemetry`` queue by name (``devices.tasks.telemetry_*``)."""

from __future__ import annotations

from celery import shared_task

from devices.telemetry.ingest import due_sources, ingest_source, prune, roll_up

__all__ = ["telemetry_ingest", "telemetry_prune", "telemetry_roll_up"]


@shared_task(name="devices.tasks.telemetry_ingest", ignore_result=True)
def telemetry_ingest() -> list[str]:
    """One cycle of every source that is due; a source another worker took is skipped."""
    results = [ingest_source(source) for source in due_sources()]
    return [f"{r.source}: {r.samples} samples" if r.ran else f"{r.source}: taken" for r in results]


@shared_task(name="devices.tasks.telemetry_roll_up", ignore_result=True)
def telemetry_roll_up() -> int:
    return roll_up()


@shared_task(name="devices.tasks.telemetry_prune", ignore_result=True)
def telemetry_prune() -> dict[str, int]:
    return prune()
