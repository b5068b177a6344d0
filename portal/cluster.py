"""The cluster this portal mirrors and writes to, from settings: one way to get a client.

``KUBE_API_SERVER`` (a plain URL, no credentials: the demo's emulator), else ``KUBECONFIG``
(+ ``KUBE_CONTEXT``), else the in-cluster service account (`kube.config.ClusterConfig` says
the order). Every process reads it here, so a watcher, a worker and a page reach the same
cluster.
"""

from __future__ import annotations

from django.conf import settings

from kube.client import Cluster
from kube.config import ClusterConfig

__all__ = ["cluster_config", "connected"]


def cluster_config() -> ClusterConfig:
    """The cluster from settings (read each time: a test or a rotated kubeconfig changes it)."""
    return ClusterConfig(
        server=settings.KUBE_API_SERVER or None,
        kubeconfig=settings.KUBECONFIG or None,
        context=settings.KUBE_CONTEXT or None,
    )


def connected() -> Cluster:
    """A client for the configured cluster; use it as a context manager (``with connected() as
    cluster:``) so its connection pool closes."""
    return Cluster(cluster_config())
