"""The claim journey in both modes against a real control plane (a manual check, not a test).

Needs a kube-apiserver + kube-scheduler + kube-controller-manager (no kubelet is needed: pods
are bound, never run). Run it with the portal pointed at that cluster and a scratch database:

    KUBECONFIG=/path/to/kubeconfig DATABASE_URL=sqlite:////tmp/journey.sqlite3 \\
        .venv/bin/python manage.py migrate -v0
    KUBECONFIG=... DATABASE_URL=... \\
        .venv/bin/python manage.py shell < scripts/real_cluster_journey.py

It creates a Node (Ready, untainted by hand: there is no kubelet), the gpu.nvidia.com
DeviceClass and one DGX H100 ResourceSlice from devices/fixtures, a namespace, a tenant and a
user; then requests devices in reservation mode and in scheduler mode, runs a pod against each
claim, and prints what the API server, the scheduler and the controller did.

Last, the scheduler replacing a reservation: the portal reserves two GPUs of dgx-a100-01 (a
node tainted NoSchedule; its pool is the only one offered while the portal chooses), then a
pod without a toleration uses the claim. kube-scheduler clears the allocation ("deallocation
of ResourceClaim completed") and allocates GPUs of dgx-h100-01 itself; the claims watcher runs
and the script prints what the portal recorded: the request's devices and node (the cluster's),
its conflicts, the audit event and the owner's notification.
"""

import contextlib
import json
import time
from datetime import UTC, datetime
from pathlib import Path

from django.contrib.auth import get_user_model
from django.contrib.auth.models import AnonymousUser

from claims.lifecycle import conflicts
from claims.models import ClaimRequest
from claims.requests.services import release_request, save_class_policy, submit_request
from claims.requests.specs import ClaimInput, SpecErrors
from kube.errors import AlreadyExists, NotFound
from kube.kinds import Kind
from mirror import following
from mirror.mapping import MIRRORED_KINDS
from mirror.reflector import Reflector
from notifications.models import Notification
from portal.cluster import connected
from portal.models import AuditEvent, Tenant
from portal.services import tenants as tenant_services

FIXTURES = Path("devices/fixtures")
NODE = "dgx-h100-01"
NS = "journey"


def fixture(name, kind, object_name):
    for item in json.loads((FIXTURES / name).read_text())["items"]:
        if item["kind"] == kind and item["metadata"]["name"] == object_name:
            meta = {
                k: v for k, v in item["metadata"].items() if k in ("name", "labels", "annotations")
            }
            return {"metadata": meta, "spec": item.get("spec", {})}
    raise LookupError(object_name)


def say(*parts):
    print(f"[{datetime.now(UTC):%H:%M:%S}]", *parts, flush=True)


def wait(what, check, seconds=30):
    start = time.monotonic()
    while time.monotonic() - start < seconds:
        value = check()
        if value:
            say(f"{what} after {time.monotonic() - start:.2f}s")
            return value
        time.sleep(0.2)
    raise SystemExit(f"timed out waiting for: {what}")


cluster = connected()
say("cluster version", cluster.version())


def ready_node(name, taints):
    """The fixture's Node, Ready by hand (no kubelet), with ``taints`` only (admission
    adds node.kubernetes.io/not-ready to a new Node)."""
    body = fixture("nodes.json", "Node", name)
    with contextlib.suppress(AlreadyExists):
        cluster.create(Kind.NODES, {"metadata": body["metadata"]})
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    cluster.patch_status(
        Kind.NODES,
        name,
        {
            "status": {
                "capacity": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "allocatable": {"cpu": "16", "memory": "64Gi", "pods": "110"},
                "conditions": [
                    {
                        "type": "Ready",
                        "status": "True",
                        "reason": "KubeletReady",
                        "message": "hand-made",
                        "lastHeartbeatTime": stamp,
                        "lastTransitionTime": stamp,
                    }
                ],
            }
        },
    )
    cluster.patch(Kind.NODES, name, {"spec": {"taints": taints}})


ready_node(NODE, [])
for kind, body in (
    (Kind.DEVICE_CLASSES, fixture("deviceclasses.json", "DeviceClass", "gpu.nvidia.com")),
    (
        Kind.RESOURCE_SLICES,
        fixture("nvidia-dgx-h100.json", "ResourceSlice", "00000-gpu.nvidia.com-dgx-h100-01-p9lts"),
    ),
    (Kind.NAMESPACES, {"metadata": {"name": NS}}),
):
    with contextlib.suppress(AlreadyExists):
        cluster.create(kind, body)


def mirror():
    for kind in MIRRORED_KINDS:
        Reflector(kind, cluster).relist()


mirror()
tenant = tenant_services.save_tenant(
    actor=None,
    tenant=Tenant.objects.filter(slug="journey").first(),
    namespaces=[NS],
    name="Journey",
    slug="journey",
)
tenant_services.save_quota(
    actor=None,
    tenant=tenant,
    device_class_name="gpu.nvidia.com",
    max_devices=8,
    max_device_memory=None,
    max_claims=None,
    max_lease=None,
)
user, _ = get_user_model().objects.get_or_create(username="journey-bob")
tenant_services.set_member(actor=None, tenant=tenant, user=user, role="member")


def pod(name, claim):
    return {
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "image": "registry.invalid/none",
                    "resources": {"claims": [{"name": "gpus"}]},
                }
            ],
            "resourceClaims": [{"name": "gpus", "resourceClaimName": claim}],
        },
    }


def claim_status(name):
    return cluster.get(Kind.RESOURCE_CLAIMS, name, NS).get("status") or {}


def journey(mode, name, count, constraint=""):
    say(f"=== {mode} mode: {name}, {count} GPU(s) {constraint}")
    save_class_policy(actor=AnonymousUser(), device_class_name="gpu.nvidia.com", mode=mode)
    request = submit_request(
        user=user,
        claim=ClaimInput(
            namespace=NS,
            name=name,
            device_class_name="gpu.nvidia.com",
            count=count,
            constraint=constraint,
        ),
    )
    request.refresh_from_db()
    say("request", request.state, request.reason or "")
    obj = cluster.get(Kind.RESOURCE_CLAIMS, name, NS)
    say(
        "claim finalizers",
        obj["metadata"].get("finalizers"),
        "allocated:",
        bool((obj.get("status") or {}).get("allocation")),
    )
    if mode == "reservation":
        say("verify:", conflicts.verify_reservation(str(request.pk)))
    cluster.create(Kind.PODS, pod(f"{name}-pod", name))
    bound = wait(
        "pod bound", lambda: cluster.get(Kind.PODS, f"{name}-pod", NS)["spec"].get("nodeName")
    )
    say("pod bound to", bound)
    status = wait(
        "claim reserved for the pod",
        lambda: claim_status(name).get("reservedFor") and claim_status(name),
    )
    results = status["allocation"]["devices"]["results"]
    say(
        "allocated devices",
        [r["device"] for r in results],
        "node selector",
        json.dumps(status["allocation"].get("nodeSelector"))[:160],
    )
    say("finalizers now", cluster.get(Kind.RESOURCE_CLAIMS, name, NS)["metadata"].get("finalizers"))
    mirror()
    say("sync:", following.sync_requests())
    request.refresh_from_db()
    say("request", request.state)
    try:
        release_request(user=user, request=request)
    except SpecErrors as error:
        say("release refused:", error)
    cluster.delete(Kind.PODS, f"{name}-pod", NS, grace_period_seconds=0)  # no kubelet
    with contextlib.suppress(NotFound):
        wait(
            "pod gone",
            lambda: (
                not any(
                    p["metadata"]["name"] == f"{name}-pod"
                    for p in cluster.list_all(Kind.PODS, namespace=NS)[0]
                )
            ),
        )
    wait("reservedFor empty", lambda: not claim_status(name).get("reservedFor"))
    time.sleep(2)
    say("allocation after the pod left:", bool(claim_status(name).get("allocation")))
    mirror()
    release_request(user=user, request=request)
    request.refresh_from_db()
    say("request", request.state)
    try:
        cluster.get(Kind.RESOURCE_CLAIMS, name, NS)
        say("claim still there (finalizer?)")
    except NotFound:
        say("claim deleted")
    mirror()


def devices_of(allocation):
    results = ((allocation or {}).get("devices") or {}).get("results") or []
    return sorted(f"{r['pool']}/{r['device']}" for r in results)


def scheduler_replaces_a_reservation():
    name, a100 = "replaced-pair", "dgx-a100-01"
    say(f"=== the scheduler replaces a reservation: {name}, 2 GPU(s) reserved on tainted {a100}")
    save_class_policy(actor=AnonymousUser(), device_class_name="gpu.nvidia.com", mode="reservation")
    ready_node(a100, [{"key": "dra-portal.io/journey", "value": "no-pods", "effect": "NoSchedule"}])
    a100_slices = [
        item
        for item in json.loads((FIXTURES / "nvidia-a100-mig.json").read_text())["items"]
        if item["kind"] == "ResourceSlice" and item["spec"].get("driver") == "gpu.nvidia.com"
    ]
    for item in a100_slices:
        with contextlib.suppress(AlreadyExists):
            cluster.create(
                Kind.RESOURCE_SLICES,
                {"metadata": {"name": item["metadata"]["name"]}, "spec": item["spec"]},
            )
    # While the portal chooses, dgx-a100-01 is the only pool offered: the H100 slice goes and
    # comes back once the reservation is written.
    h100 = fixture(
        "nvidia-dgx-h100.json", "ResourceSlice", "00000-gpu.nvidia.com-dgx-h100-01-p9lts"
    )
    with contextlib.suppress(NotFound):
        cluster.delete(Kind.RESOURCE_SLICES, h100["metadata"]["name"])
    mirror()
    request = submit_request(
        user=user,
        claim=ClaimInput(namespace=NS, name=name, device_class_name="gpu.nvidia.com", count=2),
    )
    request.refresh_from_db()
    say("request", request.state, request.reason or "", "node", request.node_name)
    say("the portal wrote", devices_of(request.allocation))
    with contextlib.suppress(AlreadyExists):
        cluster.create(Kind.RESOURCE_SLICES, h100)
    mirror()
    cluster.create(Kind.PODS, pod(f"{name}-pod", name))
    bound = wait(
        "pod bound",
        lambda: cluster.get(Kind.PODS, f"{name}-pod", NS)["spec"].get("nodeName"),
        seconds=90,
    )
    say("pod bound to", bound)
    status = wait(
        "claim reserved for the pod",
        lambda: claim_status(name).get("reservedFor") and claim_status(name),
    )
    say("the cluster holds", devices_of(status["allocation"]))

    def followed():
        request.refresh_from_db()
        return request.conflicts > 0 and request.state == ClaimRequest.State.IN_USE

    started = time.monotonic()
    Reflector(Kind.RESOURCE_CLAIMS, cluster, watch_seconds=5).run(
        seconds=60, keepalive=lambda: not followed()
    )
    say(f"claims watcher ran {time.monotonic() - started:.2f}s; followed: {followed()}")
    say(
        "portal recorded: state",
        request.state,
        "conflicts",
        request.conflicts,
        "node",
        request.node_name,
        "devices",
        devices_of(request.allocation),
    )
    for event in AuditEvent.objects.filter(
        action=AuditEvent.Action.CLAIM_CONFLICT, object_id=str(request.pk)
    ):
        say("audit", event.action, "before", event.before.get("devices"), event.before.get("node"))
        say("audit", event.action, "after ", event.after.get("devices"), event.after.get("node"))
        say("timeline:", event.after.get("summary"))
    for notice in Notification.objects.filter(object_id=str(request.pk)):
        say("notification", notice.event, notice.channel, "to", notice.user, ":", notice.subject)
    cluster.delete(Kind.PODS, f"{name}-pod", NS, grace_period_seconds=0)
    wait("reservedFor empty", lambda: not claim_status(name).get("reservedFor"))
    mirror()
    release_request(user=user, request=request)
    request.refresh_from_db()
    say("request", request.state)
    mirror()


journey("reservation", "reserved-pair", 2, "numa")
journey("scheduler", "scheduled-one", 1)
scheduler_replaces_a_reservation()
say("requests:", list(ClaimRequest.objects.values_list("name", "state", "conflicts")))
