"""The demo cluster's simulated scheduler: kube-scheduler's DRA plugin and the resourceclaim
controller, reduced to what the demo needs.

The demo's API emulator runs no scheduler and no controllers, so a pod whose claims are not
allocated would stay pending for ever. ``make demo`` therefore runs this loop next to its own
emulator, never against a real cluster (there kube-scheduler does the job). For each pod without
a node whose ``spec.resourceClaims`` name claims it:

1. creates the claims of template entries as the resourceclaim controller does (generateName
   ``<pod>-<entry>-``, the ``pod-claim-name`` annotation, the pod as controlling owner) and
   records them in the pod's ``status.resourceClaimStatuses``;
2. places the pod: claims already allocated are used as they are (their node selectors narrow
   the nodes); the others are allocated together by the portal's own allocator
   (``dra.allocator``), against the cluster's nodes, classes, slices and allocated claims;
3. adds the ``delete-protection`` finalizer and the ``dra-portal.io/simulated-scheduler``
   annotation to the claims it allocates, then writes ``status.allocation`` and adds the pod to
   ``status.reservedFor`` (status subresource, with the read resourceVersion);
4. binds the pod (``pods/<name>/binding``) and sets its phase to ``Running`` (the kubelet's part).

A pod that cannot be placed stays pending with ``PodScheduled=False``, reason ``Unschedulable``
(``SchedulerError`` when the allocator fails, e.g. on a CEL runtime error) and a message in
kube-scheduler's words; it is tried again on every pass (every ``tick_seconds``), so it goes
once slices or claims free up. When a pod goes, it is removed from
its claims' ``reservedFor``; a claim whose last reservation that was, and which carries the
finalizer, is deallocated and loses the finalizer (claims allocated by others without it keep
their allocation). Claims generated for the pod are deleted.

Not simulated: CPU/memory, node taints and affinity beyond ``nodeSelector``, preemption,
binding conditions, and releasing claims of pods that finished (Succeeded/Failed) but remain.
"""

from __future__ import annotations

import contextlib
import logging
import re
import threading
from collections import Counter
from collections.abc import Callable, Generator
from dataclasses import dataclass
from typing import Any, cast

from claims.models import SIMULATED_SCHEDULER_ANNOTATION
from demo.objects import (
    DELETE_PROTECTION,
    POD_CLAIM_NAME,
    controller_uid,
    generate_name,
    is_allocated,
    metadata_of,
    needs_scheduling,
    now_text,
    protect,
    reservation,
    set_running,
    status_of,
    unprotect,
)
from dra.allocator import DEFAULT_TIMEOUT_SECONDS, run_case
from dra.features import FEATURE_NAMES, PORTAL_FEATURES
from dra.model import InvalidObject, parse_node, parse_node_selector
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import ClusterError, Conflict, Gone, NotFound, Unreachable
from kube.kinds import Kind
from mirror.reflector import Backoff

__all__ = [
    "DELETE_PROTECTION",
    "POD_CLAIM_NAME",
    "Attempt",
    "Scheduler",
    "needs_scheduling",
    "start_simulated_scheduler",
]

logger = logging.getLogger(__name__)

CONFLICT_RETRIES = 5
# The allocator's features by their contract names, as the mirror computes device states.
ALLOCATOR_FEATURES = {
    name: getattr(PORTAL_FEATURES, re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower())
    for name in FEATURE_NAMES
}


class Unschedulable(Exception):  # noqa: N818 - a verdict, not a failure
    """The pod cannot be placed now: what its ``PodScheduled=False`` condition says.

    ``reason`` is ``Unschedulable`` when no node fits, ``SchedulerError`` when the attempt
    failed (kube-scheduler's reasons; an allocator error, e.g. a CEL runtime error, is one).
    """

    def __init__(self, message: str, reason: str = "Unschedulable") -> None:
        super().__init__(message)
        self.message = message
        self.reason = reason


@dataclass(frozen=True)
class Attempt:
    """One scheduling attempt: the node the pod was bound to, or why it was not."""

    node: str = ""
    reason: str = ""
    message: str = ""

    @property
    def is_scheduled(self) -> bool:
        return bool(self.node)


class Scheduler:
    """Places pods with claims on the demo cluster and releases their claims when they go.

    ``sync``, ``schedule``, ``release`` and ``handle`` are single steps (what tests drive);
    ``run`` loops over them until ``stop`` is set. Not thread-safe: one loop per cluster.
    """

    def __init__(
        self,
        cluster: Cluster,
        *,
        tick_seconds: float = 5.0,
        allocation_timeout: float = DEFAULT_TIMEOUT_SECONDS,
    ) -> None:
        self.cluster = cluster
        self.tick_seconds = tick_seconds
        self.allocation_timeout = allocation_timeout

    # -- the loop ----------------------------------------------------------------------------

    def run(self, stop: threading.Event) -> None:
        """A full pass, then the pods' events until the watch ends (after ``tick_seconds``),
        again and again. A dropped watch or an expired resourceVersion just starts the next
        pass (a fresh list); errors back off with jitter; one bad pod never stops the loop."""
        backoff = Backoff()
        while not stop.is_set():
            try:
                version = self.sync()
                events = self.cluster.watch(
                    Kind.PODS,
                    resource_version=version,
                    timeout_seconds=max(1, round(self.tick_seconds)),
                    allow_bookmarks=False,
                )
                # A generator (``Cluster.watch`` is annotated as returning an Iterator).
                with contextlib.closing(cast("Generator[dict[str, Any], None, None]", events)):
                    for event in events:
                        if stop.is_set():
                            break
                        self._guarded(self.handle, event)
                backoff.reset()
            except Gone:
                continue
            except ClusterError as error:
                logger.warning("simulated scheduler: %s: %s", type(error).__name__, error)
                stop.wait(backoff.next_delay(unreachable=isinstance(error, Unreachable)))
            except Exception:  # the loop must outlive its bugs
                logger.exception("simulated scheduler: pass failed")
                stop.wait(backoff.next_delay())

    def sync(self) -> str:
        """One full pass: tries every pod waiting for a node, releases reservations of pods
        that are gone, deletes claims generated for them, and drops the finalizer the scheduler
        left on a claim it no longer holds allocated. Returns the pod list's resourceVersion."""
        pods, version = self.cluster.list_all(Kind.PODS)
        for pod in pods:
            if needs_scheduling(pod):
                self._guarded(self.schedule, pod)
        live = {str(metadata_of(pod).get("uid") or "") for pod in pods}
        claims, _ = self.cluster.list_all(Kind.RESOURCE_CLAIMS)
        for claim in claims:
            self._guarded(self._tidy, claim, live)
        return version

    def handle(self, event: dict[str, Any]) -> None:
        """One watch event of a pod."""
        pod = event.get("object") or {}
        if event.get("type") == "DELETED":
            self.release(pod)
        elif event.get("type") in ("ADDED", "MODIFIED") and needs_scheduling(pod):
            self.schedule(pod)

    def _guarded(self, step: Callable[..., Any], target: dict[str, Any], *args: Any) -> None:
        """``step(target, *args)``; a failure is logged with the object (or event) it
        concerned, and the next pass tries again."""
        try:
            step(target, *args)
        except Exception:
            metadata = (target.get("object") or target).get("metadata") or {}
            logger.exception(
                "simulated scheduler: %s failed for %s/%s",
                step.__name__,
                metadata.get("namespace"),
                metadata.get("name"),
            )

    # -- scheduling --------------------------------------------------------------------------

    def schedule(self, pod: dict[str, Any]) -> Attempt:
        """One attempt to place ``pod``: allocate, reserve, bind; or say why not on the pod.

        Works on a fresh copy of the pod (events and lists may be older than the last pass).
        """
        try:
            pod = self.cluster.get(Kind.PODS, pod["metadata"]["name"], pod["metadata"]["namespace"])
        except NotFound:
            return Attempt(message="the pod is gone")
        metadata = metadata_of(pod)
        if (pod.get("spec") or {}).get("nodeName"):
            return Attempt(node=pod["spec"]["nodeName"])
        if not needs_scheduling(pod):
            return Attempt(message="the pod is not waiting for claims")
        try:
            claims = self._claims_of(pod)
            node, allocations = self._place(pod, claims)
        except Unschedulable as verdict:
            self._mark_unschedulable(pod, verdict)
            return Attempt(reason=verdict.reason, message=verdict.message)
        self._reserve(pod, claims, allocations)
        with contextlib.suppress(Conflict):  # already bound: by an earlier pass, or by another
            self.cluster.bind_pod(
                metadata["name"], metadata["namespace"], node, uid=str(metadata.get("uid") or "")
            )
        self._update(Kind.PODS, metadata["namespace"], metadata["name"], set_running, status=True)
        logger.info(
            "simulated scheduler: bound %s/%s to %s", metadata["namespace"], metadata["name"], node
        )
        return Attempt(node=node)

    def _claims_of(self, pod: dict[str, Any]) -> list[dict[str, Any]]:
        """The pod's claims, fresh from the API; creates the claims of template entries."""
        metadata, spec = metadata_of(pod), pod.get("spec") or {}
        namespace, uid = metadata["namespace"], str(metadata.get("uid") or "")
        generated = {
            entry.get("name"): entry.get("resourceClaimName")
            for entry in (pod.get("status") or {}).get("resourceClaimStatuses") or []
        }
        claims = []
        for entry in spec.get("resourceClaims") or []:
            entry_name = str(entry.get("name") or "")
            if entry.get("resourceClaimName"):
                claim_name = str(entry["resourceClaimName"])
            elif entry.get("resourceClaimTemplateName"):
                if entry_name not in generated:
                    claims.append(self._claim_from_template(pod, entry))
                    continue
                if not generated[entry_name]:
                    continue  # the controller decided that this entry needs no claim
                claim_name = str(generated[entry_name])
            else:
                raise Unschedulable(
                    f"pod claim {entry_name!r} names neither a claim nor a template"
                )
            try:
                claim = self.cluster.get(Kind.RESOURCE_CLAIMS, claim_name, namespace)
            except NotFound:
                raise Unschedulable(f'resourceclaim "{claim_name}" not found') from None
            if metadata_of(claim).get("deletionTimestamp"):
                raise Unschedulable(f'resourceclaim "{claim_name}" is being deleted')
            if entry.get("resourceClaimTemplateName") and controller_uid(claim) != uid:
                raise Unschedulable(f'resourceclaim "{claim_name}" was not created for the pod')
            if all(metadata_of(known)["uid"] != metadata_of(claim)["uid"] for known in claims):
                claims.append(claim)  # two entries may name one claim: it is allocated once
        return claims

    def _claim_from_template(self, pod: dict[str, Any], entry: dict[str, Any]) -> dict[str, Any]:
        """The claim generated for ``entry``: found (an earlier pass created it but could not
        record it), or created from its template; then recorded in the pod's status."""
        metadata = metadata_of(pod)
        namespace, uid, pod_name = metadata["namespace"], str(metadata["uid"]), metadata["name"]
        entry_name = str(entry["name"])
        owned, _ = self.cluster.list_all(Kind.RESOURCE_CLAIMS, namespace=namespace)
        found = [
            claim
            for claim in owned
            if controller_uid(claim) == uid
            and (metadata_of(claim).get("annotations") or {}).get(POD_CLAIM_NAME) == entry_name
        ]
        if found:
            claim = found[0]
        else:
            template_name = str(entry["resourceClaimTemplateName"])
            try:
                template = self.cluster.get(Kind.RESOURCE_CLAIM_TEMPLATES, template_name, namespace)
            except NotFound:
                raise Unschedulable(f'resourceclaimtemplate "{template_name}" not found') from None
            template_spec = template.get("spec") or {}
            template_metadata = template_spec.get("metadata") or {}
            claim = self.cluster.create(
                Kind.RESOURCE_CLAIMS,
                {
                    "metadata": {
                        "generateName": generate_name(pod_name, entry_name),
                        "namespace": namespace,
                        "labels": dict(template_metadata.get("labels") or {}),
                        "annotations": {
                            **(template_metadata.get("annotations") or {}),
                            POD_CLAIM_NAME: entry_name,
                        },
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Pod",
                                "name": pod_name,
                                "uid": uid,
                                "controller": True,
                                "blockOwnerDeletion": True,
                            }
                        ],
                    },
                    "spec": template_spec.get("spec") or {},
                },
            )
        claim_name = metadata_of(claim)["name"]

        def record(current: dict[str, Any]) -> bool:
            statuses = status_of(current).setdefault("resourceClaimStatuses", [])
            if any(status.get("name") == entry_name for status in statuses):
                return False
            statuses.append({"name": entry_name, "resourceClaimName": claim_name})
            return True

        self._update(Kind.PODS, namespace, pod_name, record, status=True)
        return claim

    def _place(
        self, pod: dict[str, Any], claims: list[dict[str, Any]]
    ) -> tuple[str, dict[str, dict[str, Any]]]:
        """The node for the pod and the allocations of its unallocated claims (by name).

        Nodes are filtered as kube-scheduler would (cordoned, the pod's ``nodeSelector``, the
        node selectors of the claims already allocated); the allocator then tries the rest in
        name order.
        """
        nodes, _ = self.cluster.list_all(Kind.NODES)
        selectors = []
        for claim in claims:
            raw = ((claim.get("status") or {}).get("allocation") or {}).get("nodeSelector")
            try:
                selector = parse_node_selector(raw, metadata_of(claim)["name"])
            except InvalidObject as error:
                raise Unschedulable(str(error)) from None
            if selector is not None:
                selectors.append(selector)
        wanted_labels = (pod.get("spec") or {}).get("nodeSelector") or {}
        reasons: Counter[str] = Counter()
        candidates = []
        for raw_node in sorted(nodes, key=lambda node: str(metadata_of(node).get("name"))):
            node = parse_node(raw_node, str(metadata_of(raw_node).get("name")))
            if (raw_node.get("spec") or {}).get("unschedulable"):
                reasons["node(s) were unschedulable"] += 1
            elif any(node.labels.get(key) != value for key, value in wanted_labels.items()):
                reasons["node(s) didn't match Pod's node affinity/selector"] += 1
            elif not all(selector.matches(node) for selector in selectors):
                reasons["node(s) didn't match the node selector of an allocated claim"] += 1
            else:
                candidates.append(raw_node)
        pending = [claim for claim in claims if not is_allocated(claim)]
        if candidates and not pending:
            return str(metadata_of(candidates[0])["name"]), {}
        if candidates:
            outcome = self._allocate(pod, candidates, pending)
            if outcome["status"] == "allocated":
                names = [metadata_of(claim)["name"] for claim in pending]
                return outcome["node"], dict(zip(names, outcome["allocations"], strict=True))
            if outcome["status"] == "error":
                raise Unschedulable(str(outcome["error"]), reason="SchedulerError")
            reasons["cannot allocate all claims"] += len(candidates)
        details = ", ".join(f"{count} {reason}" for reason, count in sorted(reasons.items()))
        raise Unschedulable(f"0/{len(nodes)} nodes are available: {details or 'no nodes'}.")

    def _allocate(
        self, pod: dict[str, Any], nodes: list[dict[str, Any]], claims: list[dict[str, Any]]
    ) -> dict[str, Any]:
        """The allocator's contract output for ``claims`` on the first of ``nodes`` that fits."""
        all_claims, _ = self.cluster.list_all(Kind.RESOURCE_CLAIMS)
        case = {
            "name": f"{metadata_of(pod)['namespace']}/{metadata_of(pod)['name']}",
            "features": ALLOCATOR_FEATURES,
            "nodes": nodes,
            "deviceClasses": self.cluster.list_all(Kind.DEVICE_CLASSES)[0],
            "resourceSlices": self.cluster.list_all(Kind.RESOURCE_SLICES)[0],
            "allocatedClaims": [claim for claim in all_claims if is_allocated(claim)],
            "claims": claims,
            "node": None,
        }
        return run_case(case, self.allocation_timeout)

    def _reserve(
        self,
        pod: dict[str, Any],
        claims: list[dict[str, Any]],
        allocations: dict[str, dict[str, Any]],
    ) -> None:
        """Writes the allocations and adds the pod to every claim's ``reservedFor``.

        The finalizer goes on first, as kube-scheduler does, so that no allocated claim is ever
        without it; the allocation carries its ``allocationTimestamp`` from the start (the API
        server refuses any later change to a set allocation). The demo cluster has no other
        allocator; a claim allocated meanwhile by someone else fails the attempt (the next pass
        starts over).
        """
        metadata = metadata_of(pod)
        consumer = {"resource": "pods", "name": metadata["name"], "uid": str(metadata["uid"])}
        for claim in claims:
            name, namespace = metadata_of(claim)["name"], metadata_of(claim)["namespace"]
            allocation = allocations.get(name)
            if allocation is not None:
                allocation = {**allocation, "allocationTimestamp": now_text()}
                self._update(Kind.RESOURCE_CLAIMS, namespace, name, protect, status=False)
            self._update(
                Kind.RESOURCE_CLAIMS,
                namespace,
                name,
                reservation(consumer, allocation),
                status=True,
            )

    def _mark_unschedulable(self, pod: dict[str, Any], verdict: Unschedulable) -> None:
        """Sets ``PodScheduled=False`` with the verdict's reason and message, unless the pod
        says so already (a pass over an unchanged cluster writes nothing)."""

        def mark(current: dict[str, Any]) -> bool:
            if not needs_scheduling(current):
                return False
            status = status_of(current)
            conditions = status.get("conditions") or []
            old = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
            wanted: dict[str, str | None] = {
                "type": "PodScheduled",
                "status": "False",
                "reason": verdict.reason,
                "message": verdict.message,
            }
            if old is not None and all(old.get(key) == value for key, value in wanted.items()):
                return False
            wanted["lastProbeTime"] = None
            # Still False: the condition keeps its transition time.
            wanted["lastTransitionTime"] = (
                old.get("lastTransitionTime")
                if old is not None and old.get("status") == "False"
                else now_text()
            )
            status["conditions"] = [c for c in conditions if c is not old] + [wanted]
            return True

        metadata = metadata_of(pod)
        self._update(Kind.PODS, metadata["namespace"], metadata["name"], mark, status=True)

    # -- releasing ---------------------------------------------------------------------------

    def release(self, pod: dict[str, Any]) -> None:
        """``pod`` is gone: it leaves its claims' ``reservedFor`` (see ``_unreserve``) and the
        claims generated for it are deleted."""
        metadata = metadata_of(pod)
        namespace, uid = metadata["namespace"], str(metadata.get("uid") or "")
        names = {
            str(entry["resourceClaimName"])
            for entry in (pod.get("spec") or {}).get("resourceClaims") or []
            if entry.get("resourceClaimName")
        } | {
            str(status["resourceClaimName"])
            for status in (pod.get("status") or {}).get("resourceClaimStatuses") or []
            if status.get("resourceClaimName")
        }
        claims, _ = self.cluster.list_all(Kind.RESOURCE_CLAIMS, namespace=namespace)
        owned = [claim for claim in claims if controller_uid(claim) == uid]
        for name in sorted(names | {metadata_of(claim)["name"] for claim in owned}):
            self._unreserve(namespace, name, uid)
        for claim in owned:
            self._delete_generated(claim)

    def _unreserve(self, namespace: str, name: str, uid: str) -> None:
        """Removes pod ``uid`` from the claim's ``reservedFor``. When that empties it and the
        claim carries the delete-protection finalizer, the claim is deallocated and loses the
        finalizer, as the resourceclaim controller does; without the finalizer (a claim
        allocated by someone else) the allocation stays."""
        deallocated = False

        def unreserve(claim: dict[str, Any]) -> bool:
            nonlocal deallocated
            status = status_of(claim)
            reserved = status.get("reservedFor") or []
            kept = [entry for entry in reserved if entry.get("uid") != uid]
            if len(kept) == len(reserved):
                return False
            if kept:
                status["reservedFor"] = kept
            else:
                status.pop("reservedFor", None)
            finalizers = metadata_of(claim).get("finalizers") or []
            deallocated = not kept and DELETE_PROTECTION in finalizers
            if deallocated:
                status.pop("allocation", None)
            return True

        self._update(Kind.RESOURCE_CLAIMS, namespace, name, unreserve, status=True)
        if deallocated:
            self._update(Kind.RESOURCE_CLAIMS, namespace, name, unprotect, status=False)

    def _delete_generated(self, claim: dict[str, Any]) -> None:
        metadata = metadata_of(claim)
        with contextlib.suppress(NotFound, Conflict):  # gone already, or a new claim by its name
            self.cluster.delete(
                Kind.RESOURCE_CLAIMS, metadata["name"], metadata["namespace"], uid=metadata["uid"]
            )

    def _tidy(self, claim: dict[str, Any], live: set[str]) -> None:
        """Catches up with what the watch missed for one claim: reservations of pods that are
        gone, a generated claim whose pod is gone, and the scheduler's own finalizer left on a
        claim that is no longer allocated (a pass interrupted between two writes)."""
        metadata = metadata_of(claim)
        namespace, name = metadata["namespace"], metadata["name"]
        for entry in (claim.get("status") or {}).get("reservedFor") or []:
            uid = str(entry.get("uid") or "")
            stale = entry.get("resource") == "pods" and uid not in live
            if stale and self._is_gone(namespace, str(entry.get("name")), uid):
                self._unreserve(namespace, name, uid)
        owner = controller_uid(claim)
        if owner and owner not in live:
            owner_name = next(
                (
                    o.get("name")
                    for o in metadata.get("ownerReferences") or []
                    if o.get("uid") == owner
                ),
                "",
            )
            if self._is_gone(namespace, str(owner_name), owner):
                self._delete_generated(claim)
                return
        annotations = metadata.get("annotations") or {}
        if (
            annotations.get(SIMULATED_SCHEDULER_ANNOTATION)
            and DELETE_PROTECTION in (metadata.get("finalizers") or [])
            and not is_allocated(claim)
            and not (claim.get("status") or {}).get("reservedFor")
        ):
            self._update(Kind.RESOURCE_CLAIMS, namespace, name, unprotect, status=False)

    def _is_gone(self, namespace: str, name: str, uid: str) -> bool:
        """Whether pod ``uid`` no longer exists (checked with a GET: the list may be older)."""
        try:
            pod = self.cluster.get(Kind.PODS, name, namespace)
        except NotFound:
            return True
        return str(metadata_of(pod).get("uid") or "") != uid

    # -- writes ------------------------------------------------------------------------------

    def _update(
        self,
        kind: Kind,
        namespace: str,
        name: str,
        change: Callable[[dict[str, Any]], bool],
        *,
        status: bool,
    ) -> dict[str, Any] | None:
        """GET, ``change`` in place (False: nothing to write), PUT with the resourceVersion
        read; a 409 starts over from a fresh GET. Returns the object, None when it is gone."""
        write = self.cluster.replace_status if status else self.cluster.replace
        for _ in range(CONFLICT_RETRIES):
            try:
                current = self.cluster.get(kind, name, namespace)
            except NotFound:
                return None
            if not change(current):
                return current
            try:
                return write(kind, current)
            except Conflict:
                continue
            except NotFound:
                return None
        raise Conflict(
            f"{kind} {namespace}/{name}: still conflicting after {CONFLICT_RETRIES} tries"
        )


def start_simulated_scheduler(server: str, stop: threading.Event) -> threading.Thread:
    """Runs the scheduler against the demo's own API emulator at ``server`` in a daemon thread
    until ``stop`` is set. Never for a real cluster: kube-scheduler is there."""
    cluster = Cluster(ClusterConfig(name="demo-scheduler", server=server))

    def loop() -> None:
        with cluster:
            Scheduler(cluster).run(stop)

    thread = threading.Thread(target=loop, daemon=True, name="simulated-scheduler")
    thread.start()
    return thread
