"""What each tenant's allocated claims hold, per device class, kept as counters.

The quota check runs under the tenant's row lock on every submission; counting a tenant's
10,000 claims there (and parsing their specs) made submissions one at a time at 9 a second.
The counters hold the **mirrored, allocated** part of a tenant's usage: devices, device
memory and claims per class, as the allocation results name them (admin-access results
never count). The mirror's store keeps them (``mirror.usage_counts``) in the transaction
that changes what they count: the results of a claim, its tenant, the memory of a device a
result names; tenant-namespace changes do the same (``claims.signals``). What depends on the
inventory of the moment (the claims not allocated yet, counted by what they ask) and the
requests in flight is counted when asked (``claims.requests.quota``).

One rule, two uses: :meth:`AllocatedDeviceQuerySet.usage` sums results, and a batch's
counter change is the difference of that sum over the results it touched, after and before.
:meth:`UsageCounterQuerySet.recount` compares the counters with the same sum over every
result (the property test, and the periodic check that repairs and reports any drift).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from typing import NamedTuple

from django.db import connection, models, transaction

from devices.locks import lock_device_writes
from portal.models import Tenant

__all__ = ["Counted", "UsageCounter", "UsageCounterQuerySet", "UsageKey", "difference"]

UsageKey = tuple[int, str]  # (tenant id, device class name)


class Counted(NamedTuple):
    """Devices, device memory (bytes) and claims counted for one tenant and class."""

    devices: int = 0
    memory_bytes: int = 0
    claims: int = 0

    def __bool__(self) -> bool:
        return bool(self.devices or self.memory_bytes or self.claims)


def difference(
    after: Mapping[UsageKey, Counted], before: Mapping[UsageKey, Counted]
) -> dict[UsageKey, Counted]:
    """``after - before`` per key, leaving out keys that did not change."""
    changes = {}
    for key in set(after) | set(before):
        new, old = after.get(key, Counted()), before.get(key, Counted())
        change = Counted(*(a - b for a, b in zip(new, old, strict=True)))
        if change:
            changes[key] = change
    return changes


def summed(results: models.QuerySet) -> dict[UsageKey, Counted]:
    """:class:`Counted` per (tenant, class) of ``results`` (an ``AllocatedDevice`` queryset):
    the results that hold their device, of allocated claims of a tenant. A claim counts once
    per class it holds devices of.

    One read driven by the results' own filter, joined to their claims and devices by key and
    summed here. Conditions on the claim stay out of the statement: right after a tenant took
    over namespaces the planner's statistics still said no claim had a tenant, and with
    ``tenant IS NOT NULL`` in it the planner walked the tenant's 3,300 claims to find a
    batch's 50 (40 ms, three times per batch of the mirror)."""
    rows = (
        results.filter(admin_access=False)
        .order_by()
        .values_list(
            "claim_id",
            "device_class_name",
            "claim__tenant_id",
            "claim__is_allocated",
            "device__memory_bytes",
        )
    )
    devices: dict[UsageKey, int] = defaultdict(int)
    memory_bytes: dict[UsageKey, int] = defaultdict(int)
    claims: dict[UsageKey, set[int]] = defaultdict(set)
    for claim, device_class, tenant, allocated, memory in rows:
        if tenant is None or not allocated:
            continue
        key = (tenant, device_class)
        devices[key] += 1
        memory_bytes[key] += memory or 0
        claims[key].add(claim)
    return {
        key: Counted(count, memory_bytes[key], len(claims[key])) for key, count in devices.items()
    }


class UsageCounterQuerySet(models.QuerySet["UsageCounter"]):
    def of(self, tenant: Tenant | int) -> dict[str, Counted]:
        """The tenant's counters by class name (one indexed read)."""
        tenant_id = tenant.pk if isinstance(tenant, Tenant) else tenant
        return {
            name: Counted(devices, memory, claims)
            for name, devices, memory, claims in self.filter(tenant_id=tenant_id).values_list(
                "device_class_name", "devices", "memory_bytes", "claims"
            )
        }

    def add(self, changes: Mapping[UsageKey, Counted]) -> None:
        """Adds ``changes`` to the counters in one statement per key, in key order (two
        writers adding to the same keys take their row locks in the same order); a counter
        back at zero goes. Call inside the transaction that made the change."""
        if not changes:
            return
        # The table name is the model's own, not input.
        table = connection.ops.quote_name(self.model._meta.db_table)
        statement = (
            f"INSERT INTO {table} (tenant_id, device_class_name, devices, memory_bytes, claims) "  # noqa: S608
            "VALUES (%s, %s, %s, %s, %s) "
            "ON CONFLICT (tenant_id, device_class_name) DO UPDATE SET "
            f"devices = {table}.devices + excluded.devices, "
            f"memory_bytes = {table}.memory_bytes + excluded.memory_bytes, "
            f"claims = {table}.claims + excluded.claims"
        )
        with connection.cursor() as cursor:
            for (tenant_id, device_class), change in sorted(changes.items()):
                cursor.execute(statement, [tenant_id, device_class, *change])
        keys = list(changes)
        gone = models.Q()
        for tenant_id, device_class in keys:
            gone |= models.Q(tenant_id=tenant_id, device_class_name=device_class)
        self.filter(gone, devices=0, memory_bytes=0, claims=0).delete()

    def recount(self, tenant_ids: Iterable[int] | None = None) -> dict[UsageKey, Counted]:
        """Counts every result again (of ``tenant_ids``, or all) and sets the counters to it;
        returns how far they were off (empty when they were right). Runs in its own
        transaction under the inventory writers' lock, so no batch commits in between."""
        with transaction.atomic():
            lock_device_writes()
            return self._recount(tenant_ids)

    def _recount(self, tenant_ids: Iterable[int] | None) -> dict[UsageKey, Counted]:
        from claims.models.resource_claims import AllocatedDevice

        results = AllocatedDevice.objects.all()
        counters = self.all()
        if tenant_ids is not None:
            wanted = list(tenant_ids)
            results = results.filter(claim__tenant_id__in=wanted)
            counters = counters.filter(tenant_id__in=wanted)
        true = summed(results)
        kept = {
            (tenant_id, name): Counted(devices, memory, claims)
            for tenant_id, name, devices, memory, claims in counters.values_list(
                "tenant_id", "device_class_name", "devices", "memory_bytes", "claims"
            )
        }
        drift = difference(true, kept)
        self.add(drift)
        return drift


class UsageCounter(models.Model):
    """See the module docstring."""

    tenant = models.ForeignKey(Tenant, on_delete=models.CASCADE, related_name="usage_counters")
    device_class_name = models.CharField(max_length=253, blank=True)
    devices = models.BigIntegerField(default=0)
    memory_bytes = models.BigIntegerField(default=0)
    claims = models.BigIntegerField(default=0)

    objects = UsageCounterQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["tenant", "device_class_name"], name="one_usage_counter_per_class"
            )
        ]

    def __str__(self) -> str:
        return f"{self.tenant_id}/{self.device_class_name}: {self.devices} devices"
