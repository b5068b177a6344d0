"""The tenants' usage counters stay equal to a full recount through every write path.

Seeded random histories of watch batches (claims allocated, changed, moved between tenants'
namespaces, deleted, their names reused; slices republished with other memory, deleted and
back; relists that drop objects; namespaces changing owner) go through the mirror's store as
the watchers send them. After every step the counters equal a recount written here the way
the quota counted before it had counters: each allocated result of a tenant's claim, its
class read from the claim's spec by the claim parser, its device's memory from the device row.
"""

from __future__ import annotations

import random
from collections import defaultdict

import pytest

from claims.models import AllocatedDevice, Counted, UsageCounter
from claims.requests.quota import _request_classes, tenant_usage
from kube.kinds import Kind
from mirror.store import apply_events, delete_missing
from portal.models import Tenant
from portal.services.tenants import save_tenant

DRIVER = "gpu.example.com"
CLASSES = ["gpu.example.com", "big.example.com", "small.example.com"]
NAMESPACES = ["team-a-1", "team-a-2", "team-b-1", "nobody"]
POOLS = ["node-a", "node-b", "node-c"]
DEVICES_PER_POOL = 4


def slice_object(pool: str, generation: int, memory_gib: list[int], version: int) -> dict:
    return {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceSlice",
        "metadata": {
            "name": f"{pool}-{DRIVER}",
            "uid": f"slice-{pool}-{generation}",
            "resourceVersion": str(version),
        },
        "spec": {
            "driver": DRIVER,
            "nodeName": pool,
            "pool": {"name": pool, "generation": generation, "resourceSliceCount": 1},
            "devices": [
                {
                    "name": f"gpu-{number}",
                    "attributes": {"index": {"int": number}},
                    "capacity": {"memory": {"value": f"{gib}Gi"}},
                }
                for number, gib in enumerate(memory_gib)
            ],
        },
    }


def claim_object(
    rng: random.Random, namespace: str, name: str, uid: str, version: int, allocated: bool
) -> dict:
    """A claim of one to three requests (some ``firstAvailable``), allocated or not; results
    name devices of the pools, some through admin access, some more than once."""
    requests, names = [], []
    for number in range(rng.randint(1, 3)):
        if rng.random() < 0.3:
            alternatives = rng.sample(CLASSES, 2)
            requests.append(
                {
                    "name": f"r{number}",
                    "firstAvailable": [
                        {"name": f"s{index}", "deviceClassName": device_class}
                        for index, device_class in enumerate(alternatives)
                    ],
                }
            )
            names.append(f"r{number}/s{rng.randrange(2)}")
        else:
            request = {"deviceClassName": rng.choice(CLASSES), "count": 1}
            if rng.random() < 0.15:
                request["adminAccess"] = True
            requests.append({"name": f"r{number}", "exactly": request})
            names.append(f"r{number}")
    obj = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "uid": uid,
            "resourceVersion": str(version),
        },
        "spec": {"devices": {"requests": requests}},
    }
    if allocated:
        results = []
        for request_name in names:
            for _ in range(rng.randint(0, 2)):
                result = {
                    "request": request_name,
                    "driver": DRIVER,
                    "pool": rng.choice(POOLS),
                    "device": f"gpu-{rng.randrange(DEVICES_PER_POOL + 1)}",  # one may not exist
                }
                if rng.random() < 0.1:
                    result["adminAccess"] = True
                results.append(result)
        obj["status"] = {"allocation": {"devices": {"results": results}}}
    return obj


def recount() -> dict[tuple[int, str], Counted]:
    """The usage of every tenant's allocated claims, counted result by result."""
    devices: dict[tuple[int, str], int] = defaultdict(int)
    memory: dict[tuple[int, str], int] = defaultdict(int)
    claims: dict[tuple[int, str], set[int]] = defaultdict(set)
    results = AllocatedDevice.objects.filter(
        claim__is_allocated=True, admin_access=False, claim__tenant__isnull=False
    ).select_related("claim", "device")
    for result in results:
        option = _request_classes(result.claim.spec).get(result.request)
        key = (result.claim.tenant_id, option[0] if option else "")
        devices[key] += 1
        memory[key] += (result.device.memory_bytes or 0) if result.device else 0
        claims[key].add(result.claim_id)
    return {key: Counted(devices[key], memory[key], len(claims[key])) for key in devices}


def counters() -> dict[tuple[int, str], Counted]:
    return {
        (tenant_id, name): Counted(devices, memory, claims)
        for tenant_id, name, devices, memory, claims in UsageCounter.objects.values_list(
            "tenant_id", "device_class_name", "devices", "memory_bytes", "claims"
        )
    }


class History:
    """The cluster as the watchers would report it, one random step at a time."""

    def __init__(self, seed: int, tenants: dict[str, Tenant]) -> None:
        self.rng = random.Random(seed)
        self.tenants = tenants
        self.version = 100
        self.claims: dict[str, dict] = {}  # uid → object
        self.generations = dict.fromkeys(POOLS, 1)
        self.serial = 0

    def next_version(self) -> int:
        self.version += 1
        return self.version

    def publish(self, pool: str) -> dict:
        memory = [self.rng.choice([40, 80, 141]) for _ in range(DEVICES_PER_POOL)]
        return slice_object(pool, self.generations[pool], memory, self.next_version())

    def new_claim(self, name: str | None = None, namespace: str | None = None) -> dict:
        self.serial += 1
        obj = claim_object(
            self.rng,
            namespace or self.rng.choice(NAMESPACES),
            name or f"claim-{self.serial}",
            f"uid-{self.serial}",
            self.next_version(),
            allocated=self.rng.random() < 0.8,
        )
        self.claims[obj["metadata"]["uid"]] = obj
        return obj

    def step(self) -> str:
        rng = self.rng
        action = rng.choices(
            ["add", "change", "delete", "reuse", "republish", "drop-pool", "relist", "owner"],
            weights=[5, 4, 2, 1, 2, 1, 1, 1],
        )[0]
        if action == "add" or not self.claims and action in ("change", "delete", "reuse"):
            batch = [
                {"type": "ADDED", "object": self.new_claim()} for _ in range(rng.randint(1, 4))
            ]
            apply_events(Kind.RESOURCE_CLAIMS, batch)
        elif action == "change":
            uid = rng.choice(sorted(self.claims))
            old = self.claims[uid]["metadata"]
            obj = claim_object(
                rng, old["namespace"], old["name"], uid, self.next_version(), rng.random() < 0.7
            )
            self.claims[uid] = obj
            apply_events(Kind.RESOURCE_CLAIMS, [{"type": "MODIFIED", "object": obj}])
        elif action == "delete":
            uid = rng.choice(sorted(self.claims))
            obj = self.claims.pop(uid)
            apply_events(Kind.RESOURCE_CLAIMS, [{"type": "DELETED", "object": obj}])
        elif action == "reuse":  # deleted and created again under the name, the delete missed
            uid = rng.choice(sorted(self.claims))
            old = self.claims.pop(uid)["metadata"]
            obj = self.new_claim(old["name"], old["namespace"])
            apply_events(Kind.RESOURCE_CLAIMS, [{"type": "ADDED", "object": obj}])
        elif action == "republish":  # same slice, other memory (or a new generation)
            pool = rng.choice(POOLS)
            if rng.random() < 0.3:
                self.generations[pool] += 1
            apply_events(Kind.RESOURCE_SLICES, [{"type": "MODIFIED", "object": self.publish(pool)}])
        elif action == "drop-pool":
            pool = rng.choice(POOLS)
            gone = self.publish(pool)
            apply_events(Kind.RESOURCE_SLICES, [{"type": "DELETED", "object": gone}])
            apply_events(Kind.RESOURCE_SLICES, [{"type": "ADDED", "object": self.publish(pool)}])
        elif action == "relist":  # a relist that no longer lists some claims
            for uid in rng.sample(sorted(self.claims), k=min(len(self.claims), 2)):
                del self.claims[uid]
            delete_missing(Kind.RESOURCE_CLAIMS, set(self.claims), str(self.version))
        else:  # namespaces change owner (or lose it)
            owners = {name: rng.choice(["a", "b", None]) for name in ("team-a-2", "nobody")}
            save_tenant(actor=None, tenant=self.tenants["a"], namespaces=["team-a-1"])
            save_tenant(actor=None, tenant=self.tenants["b"], namespaces=["team-b-1"])
            for key, first in (("a", "team-a-1"), ("b", "team-b-1")):
                names = [first, *(name for name, owner in owners.items() if owner == key)]
                save_tenant(actor=None, tenant=self.tenants[key], namespaces=names)
        return action


@pytest.fixture
def tenants(db):
    a = save_tenant(actor=None, tenant=None, name="Team A", namespaces=["team-a-1", "team-a-2"])
    b = save_tenant(actor=None, tenant=None, name="Team B", namespaces=["team-b-1"])
    return {"a": a, "b": b}


@pytest.mark.parametrize("seed", [1, 2, 3, 4])
def test_counters_equal_a_full_recount_after_every_step(tenants, seed):
    history = History(seed, tenants)
    for pool in POOLS:
        apply_events(Kind.RESOURCE_SLICES, [{"type": "ADDED", "object": history.publish(pool)}])
    seen = set()
    for number in range(60):
        action = history.step()
        seen.add(action)
        assert counters() == recount(), f"seed {seed}, step {number}: {action}"
    assert UsageCounter.objects.recount() == {}
    assert len(seen) >= 6  # the history went through most write paths
    assert any(c.devices for c in counters().values())  # and counted something


def test_claims_before_their_devices_count_memory_once_the_slice_arrives(tenants):
    history = History(7, tenants)
    claim = claim_object(history.rng, "team-a-1", "early", "early", 50, allocated=True)
    claim["spec"]["devices"]["requests"] = [
        {"name": "r0", "exactly": {"deviceClassName": "gpu.example.com", "count": 2}}
    ]
    claim["status"]["allocation"]["devices"]["results"] = [
        {"request": "r0", "driver": DRIVER, "pool": "node-a", "device": f"gpu-{n}"} for n in (0, 1)
    ]
    apply_events(Kind.RESOURCE_CLAIMS, [{"type": "ADDED", "object": claim}])
    key = (tenants["a"].pk, "gpu.example.com")
    assert counters() == {key: Counted(2, 0, 1)}  # the devices are not mirrored yet
    apply_events(
        Kind.RESOURCE_SLICES,
        [{"type": "ADDED", "object": slice_object("node-a", 1, [80, 80, 80, 80], 60)}],
    )
    assert counters() == {key: Counted(2, 160 * 2**30, 1)}
    usage = tenant_usage(tenants["a"])["gpu.example.com"]
    assert (usage.devices, usage.memory_bytes, usage.claims) == (2, 160 * 2**30, 1)


def test_the_check_repairs_counters_that_drifted(tenants):
    UsageCounter.objects.create(tenant=tenants["b"], device_class_name="gpu.example.com", devices=3)
    assert UsageCounter.objects.recount() == {
        (tenants["b"].pk, "gpu.example.com"): Counted(-3, 0, 0)
    }
    assert counters() == {}
