"""The mirror's metrics read at scrape time from ``MirrorStatus`` (``portal.metrics``): how long
each kind has been silent, whether it is stale (the Mirror page's rule), and its events,
relists and errors as counters. The rows are written by whichever process holds the kind's
watcher, so the web serves them with no help from the watchers."""

from __future__ import annotations

from collections.abc import Iterable

from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric

from mirror.mapping import MIRRORED_KINDS
from mirror.models import MirrorStatus
from portal.metrics import PREFIX, CachedCollector

__all__ = ["MirrorCollector"]


class MirrorCollector(CachedCollector):
    name = "mirror"

    def read(self) -> Iterable[Metric]:
        statuses = {status.kind: status for status in MirrorStatus.objects.all()}
        silent = GaugeMetricFamily(
            f"{PREFIX}_mirror_seconds_since_seen",
            "Seconds since the kind's watcher last heard from the API server (an event, a "
            "bookmark or a complete list): the mirror's lag.",
            labels=["kind"],
        )
        stale = GaugeMetricFamily(
            f"{PREFIX}_mirror_stale",
            "1 when the kind was not heard from within MIRROR_STALE_SECONDS (or never), else 0.",
            labels=["kind"],
        )
        commit = GaugeMetricFamily(
            f"{PREFIX}_mirror_commit_lag_seconds",
            "Event received → rows committed, for the kind's last batch.",
            labels=["kind"],
        )
        events = CounterMetricFamily(
            f"{PREFIX}_mirror_events",
            "Watch events applied to the kind's rows.",
            labels=["kind"],
        )
        relists = CounterMetricFamily(
            f"{PREFIX}_mirror_relists", "Complete lists of the kind.", labels=["kind"]
        )
        errors = CounterMetricFamily(
            f"{PREFIX}_mirror_errors",
            "Errors the kind's watcher met (it backs off and retries).",
            labels=["kind"],
        )
        for kind in MIRRORED_KINDS:
            status = statuses.get(kind.value)
            if status is None:
                stale.add_metric([kind.value], 1.0)
                continue
            seconds = status.seconds_since_seen
            if seconds is not None:
                silent.add_metric([kind.value], seconds)
            stale.add_metric([kind.value], 1.0 if status.is_stale else 0.0)
            if status.lag_seconds is not None:
                commit.add_metric([kind.value], status.lag_seconds)
            events.add_metric([kind.value], float(status.events_total))
            relists.add_metric([kind.value], float(status.relists_total))
            errors.add_metric([kind.value], float(status.error_count))
        return [silent, stale, commit, events, relists, errors]
