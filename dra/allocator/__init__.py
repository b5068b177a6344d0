"""The DRA structured allocator: pure functions over resource.k8s.io/v1 JSON, no ORM, no I/O.

Entry points for the portal:

* :func:`run_case` — the ``manage.py allocate`` contract (one case dict → one output dict);
* :func:`build_cluster` + :meth:`Cluster.allocate` — repeated allocations against one
  inventory, choosing the node when none is given (:meth:`Cluster.commit` records results);
* :func:`explain_case` — per-request reasons when claims cannot be allocated;
* :func:`preview_selector` — which devices a CEL selector matches, and errors.
"""

from dra.allocator.cluster import Cluster, NodeOutcome
from dra.allocator.contract import build_cluster, outcome_json, run_case
from dra.allocator.explain import (
    RequestExplanation,
    explain_case,
    explain_claims,
    preview_selector,
)
from dra.allocator.pools import Inventory
from dra.allocator.results import allocation_result
from dra.allocator.search import DEFAULT_TIMEOUT_SECONDS, AllocatedState, AllocationError
from dra.features import Features

__all__ = [
    "DEFAULT_TIMEOUT_SECONDS",
    "AllocationError",
    "Cluster",
    "AllocatedState",
    "Features",
    "Inventory",
    "NodeOutcome",
    "RequestExplanation",
    "allocation_result",
    "build_cluster",
    "explain_case",
    "explain_claims",
    "outcome_json",
    "preview_selector",
    "run_case",
]
