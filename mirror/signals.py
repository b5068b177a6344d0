"""Signals the mirror sends, for what follows the cluster besides the mirrored rows.

``cluster_replaced``: sent (sender ``Reflector``, ``kind``: the ``Kind`` relisted,
``cluster_uid``: the cluster's identity as now read, "" when unreadable) once a *reset* relist
has committed: the kind's rows now come from another cluster (a new ``kube-system`` uid), or
from a history that went back (a restored etcd). Each kind's watcher sends it for its own kind;
whatever the portal keeps in the cluster itself (the ResourceQuota backstop) may be missing
there and is checked again.
"""

from django.dispatch import Signal

__all__ = ["cluster_replaced"]

cluster_replaced = Signal()
