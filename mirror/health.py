"""Readiness checks of the mirror (``/readyz``, docs/operations.md): each mirrored kind heard
from within ``MIRROR_STALE_SECONDS`` (the Mirror page's rule, ``MirrorStatus.freshness``), and
the API server answering through the one cluster client."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

from django.conf import settings
from django.db import DatabaseError

from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import ClusterError
from mirror.mapping import MIRRORED_KINDS
from mirror.models import MirrorStatus
from portal.cluster import cluster_config
from portal.health import Check, reason_for

__all__ = ["apiserver_check", "mirror_check"]


def mirror_check() -> Check:
    """Every mirrored kind fresh; the reason names the kinds that are not, and ``kinds`` holds
    each kind's freshness and seconds since it was last heard from."""
    try:
        statuses = {status.kind: status for status in MirrorStatus.objects.all()}
    except DatabaseError as error:
        return Check(False, reason_for(error))
    kinds = {}
    behind = []
    for kind in MIRRORED_KINDS:
        status = statuses.get(kind.value)
        if status is None:
            kinds[kind.value] = {
                "ok": False,
                "freshness": "never_synced",
                "seconds_since_seen": None,
            }
            behind.append(f"{kind.value} never synced")
            continue
        silent = status.seconds_since_seen
        kinds[kind.value] = {
            "ok": not status.is_stale,
            "freshness": status.freshness.value,
            "seconds_since_seen": None if silent is None else round(silent, 1),
        }
        if status.is_stale:
            behind.append(
                f"{kind.value} never heard from"
                if silent is None
                else f"{kind.value} silent for {silent:.0f} s"
            )
    reason = (
        f"{', '.join(behind)} (stale after {settings.MIRROR_STALE_SECONDS} s)" if behind else ""
    )
    return Check(not behind, reason, {"kinds": kinds})


_apiserver_lock = threading.Lock()
# The configuration asked, when, and its answer.
_apiserver_last: tuple[ClusterConfig, float, Check] | None = None


def apiserver_check() -> Check:
    """``GET /version`` with ``READYZ_TIMEOUT_SECONDS`` to connect and to answer; the answer is
    kept ``READYZ_CLUSTER_CACHE_SECONDS`` so that probes from every pod do not add up to load
    on the API server. Concurrent probes wait for the one in flight."""
    global _apiserver_last
    timeout = float(settings.READYZ_TIMEOUT_SECONDS)
    config = replace(cluster_config(), connect_timeout=timeout, read_timeout=timeout)
    with _apiserver_lock:
        if (
            _apiserver_last is not None
            and _apiserver_last[0] == config
            and time.monotonic() - _apiserver_last[1] < settings.READYZ_CLUSTER_CACHE_SECONDS
        ):
            return _apiserver_last[2]
        try:
            with Cluster(config) as cluster:
                version = cluster.version()
            check = Check(True, details={"version": version.git_version})
        except ClusterError as error:
            check = Check(False, reason_for(error))
        _apiserver_last = (config, time.monotonic(), check)
        return check
