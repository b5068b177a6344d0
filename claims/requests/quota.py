"""What a tenant holds of each device class, against its quota (DESIGN §6).

Usage counts every claim in the tenant's namespaces, portal-made or not, from the mirror:
allocated claims by their results (devices, and the ``memory`` capacity of the devices they
hold), from counters the mirror keeps as it writes them (``claims.models.usage_counters``);
unallocated ones by what they ask (count × the largest memory among the devices their class
and selectors match). Admin-access results never count. Requests the portal accepted but whose
claim the mirror does not show yet count by what they hold (``held_*``), so a request in flight
is never forgotten and never counted twice. Three small queries whatever the number of claims.
"""

from __future__ import annotations

import time
from collections import OrderedDict, defaultdict
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import Count, Exists, OuterRef, Q, Sum

from claims.capacity.index import index
from claims.models import ClaimRequest, ResourceClaim, UsageCounter
from dra.memory import without_cyclic_gc
from dra.model import ExactRequest, InvalidObject, parse_claim
from portal.models import Quota, Tenant
from toolkit.durations import format_duration

__all__ = [
    "ClassUsage",
    "QuotaCheck",
    "approval_reasons",
    "check_quota",
    "format_gib",
    "judge_quota",
    "quota_report",
    "renewal_reasons",
    "tenant_usage",
]


@dataclass(slots=True)
class ClassUsage:
    """Held now (mirror) and in flight (accepted requests not mirrored yet), per measure."""

    devices: int = 0
    memory_bytes: int = 0
    claims: int = 0
    in_flight_devices: int = 0
    in_flight_memory_bytes: int = 0
    in_flight_claims: int = 0

    @property
    def total_devices(self) -> int:
        return self.devices + self.in_flight_devices

    @property
    def total_memory_bytes(self) -> int:
        return self.memory_bytes + self.in_flight_memory_bytes

    @property
    def total_claims(self) -> int:
        return self.claims + self.in_flight_claims

    def to_json(self) -> dict[str, int]:
        return {
            "devices": self.devices,
            "memory_bytes": self.memory_bytes,
            "claims": self.claims,
            "in_flight_devices": self.in_flight_devices,
            "in_flight_memory_bytes": self.in_flight_memory_bytes,
            "in_flight_claims": self.in_flight_claims,
        }


# What one (sub)request asks: its class, a count (or "All"; 0 for admin access, which never
# counts) and the parsed request (class and selectors, what the index matches devices with).
Option = tuple[str, Any, ExactRequest]


def _request_classes(spec: dict[str, Any]) -> dict[str, Option]:
    """Per request (and ``request/subrequest``) name, what it asks — read with the DRA core's
    claim parser; a spec it cannot read asks for nothing."""
    try:
        claim = parse_claim(
            {"metadata": {"name": "claim", "namespace": "quota", "uid": "claim"}, "spec": spec},
            "claim",
        )
    except InvalidObject:
        return {}
    options: dict[str, Option] = {}
    for request in claim.requests:
        alternatives = (
            [(request.name, request.exactly)]
            if request.exactly is not None
            else [(f"{request.name}/{sub.name}", sub) for sub in request.first_available]
        )
        for name, option in alternatives:
            count: Any = "All" if option.allocation_mode == "All" else option.count
            options[name] = (
                option.device_class_name,
                0 if option.admin_access else count,
                option,
            )
    return options


# What each mirrored claim asks, by (uid, resourceVersion): a claim's spec is read and parsed
# once per version, however often its tenant's usage is counted. Bounded; oldest first out.
_OPTIONS: OrderedDict[tuple[str, str], dict[str, Option]] = OrderedDict()
_OPTIONS_LIMIT = 100_000


def _claim_options(
    claims: list[tuple[int, str, str]],
) -> dict[int, dict[str, Option]]:
    """Per claim pk, :func:`_request_classes` of its spec (cached by uid and version)."""
    found: dict[int, dict[str, Option]] = {}
    missing: dict[int, tuple[str, str]] = {}
    for pk, uid, version in claims:
        cached = _OPTIONS.get((uid, version))
        if cached is None:
            missing[pk] = (uid, version)
        else:
            found[pk] = cached
    pks = list(missing)
    # Thousands of specs parsed at once on a process's first count: without the cyclic
    # collector, whose passes over a large heap (the allocation index's) cost more than the
    # parsing (0.6 of 0.8 s at 3,300 claims in the claims benchmark).
    with without_cyclic_gc():
        _parse_options(pks, missing, found)
    while len(_OPTIONS) > _OPTIONS_LIMIT:
        _OPTIONS.popitem(last=False)
    return found


def _parse_options(
    pks: list[int], missing: dict[int, tuple[str, str]], found: dict[int, dict[str, Option]]
) -> None:
    for start in range(0, len(pks), 2000):
        for pk, spec in ResourceClaim.objects.filter(pk__in=pks[start : start + 2000]).values_list(
            "pk", "raw__spec"
        ):
            options = _request_classes(spec if isinstance(spec, dict) else {})
            found[pk] = options
            _OPTIONS[missing[pk]] = options


_RECENT: dict[tuple[int, Any], tuple[float, dict[str, ClassUsage]]] = {}


def tenant_usage(tenant: Tenant, *, max_age: float = 0) -> dict[str, ClassUsage]:
    """Usage per device class name. Three small queries whatever the number of claims (the
    counters, the claims not allocated yet, the requests in flight), so it stays cheap inside
    the submit transaction.
    ``max_age``: advice (the preview) may reuse a result up to that many seconds old."""
    if max_age:
        recent = _RECENT.get((tenant.pk, tenant.created_at))
        if recent is not None and time.monotonic() - recent[0] < max_age:
            return recent[1]
    usage = _count_usage(tenant)
    _RECENT[(tenant.pk, tenant.created_at)] = (time.monotonic(), usage)
    return usage


def _count_usage(tenant: Tenant) -> dict[str, ClassUsage]:
    usage: dict[str, ClassUsage] = defaultdict(ClassUsage)
    # Allocated claims: the counters the mirror keeps (``claims.models.usage_counters``).
    for device_class, counted in UsageCounter.objects.of(tenant).items():
        entry = usage[device_class]
        entry.devices += counted.devices
        entry.memory_bytes += counted.memory_bytes
        entry.claims += counted.claims
    # Claims not allocated yet, by what they ask of today's inventory: few of the tenant's.
    pending = list(
        ResourceClaim.objects.filter(tenant=tenant, is_allocated=False).values_list(
            "pk", "uid", "resource_version"
        )
    )
    options_of = _claim_options(pending)
    for pk, _, _ in pending:
        seen_requests: set[str] = set()
        classes_used: set[str] = set()
        for name, (device_class, count, request) in options_of.get(pk, {}).items():
            top = name.split("/")[0]
            if top in seen_requests or count == 0:
                continue  # firstAvailable: the first alternative stands for the request
            seen_requests.add(top)
            matched, memory = index().summary(device_class, request)
            devices = matched if count == "All" else int(count)
            classes_used.add(device_class)
            usage[device_class].devices += devices
            usage[device_class].memory_bytes += devices * memory
        for device_class in classes_used:
            usage[device_class].claims += 1
    # Accepted requests the mirror does not show yet, by what they hold. A request waiting
    # for approval holds nothing: approving it checks the quota again. A shared template's
    # request holds only until its template is written.
    # By namespace and name alone: the unique index answers it (with the tenant too, the
    # planner scanned the tenant's claims per request: 0.2 s at 10,000).
    mirrored = ResourceClaim.objects.filter(namespace=OuterRef("namespace"), name=OuterRef("name"))
    in_flight = (
        ClaimRequest.objects.filter(tenant=tenant)
        .active()
        .exclude(state=ClaimRequest.State.PENDING_APPROVAL)
        .exclude(
            Q(sharing=ClaimRequest.Sharing.TEMPLATE)
            & ~Q(state__in=[ClaimRequest.State.SUBMITTED, ClaimRequest.State.ALLOCATING])
        )
        .exclude(Exists(mirrored))
        .order_by()
        .values_list("device_class_name")
        .annotate(Sum("held_devices"), Sum("held_memory_bytes"), Count("pk"))
    )
    for device_class, devices, memory, claims in in_flight:
        entry = usage[device_class]
        entry.in_flight_devices += devices or 0
        entry.in_flight_memory_bytes += memory or 0
        entry.in_flight_claims += claims
    return dict(usage)


@dataclass(slots=True)
class QuotaCheck:
    """The verdict for asking ``asked_*`` more of a class: ``problems`` empty when it fits."""

    quota: Quota | None
    usage: ClassUsage
    asked_devices: int
    asked_memory_bytes: int
    problems: list[str] = field(default_factory=list)

    @property
    def fits(self) -> bool:
        return not self.problems

    def refuses(self, *, admin_access: bool) -> bool:
        """The one over-quota rule: a request over the quota is refused, unless the quota
        sends such requests to approval (``approve_over_quota``); admin access (portal admins
        only) is outside the quota."""
        waits = self.quota is not None and self.quota.approve_over_quota
        return not self.fits and not admin_access and not waits

    def room(self) -> dict[str, int | None]:
        """What would still fit (None: unlimited)."""
        quota = self.quota
        if quota is None:
            return {"devices": 0, "memory_bytes": 0, "claims": 0}

        def left(limit: int | None, used: int) -> int | None:
            return None if limit is None else max(0, limit - used)

        return {
            "devices": left(quota.max_devices, self.usage.total_devices),
            "memory_bytes": left(quota.max_device_memory, self.usage.total_memory_bytes),
            "claims": left(quota.max_claims, self.usage.total_claims),
        }


def format_gib(value: int) -> str:
    """Bytes as people read them in messages: ``318.6 GiB``, ``80 GiB``."""
    return f"{value / 2**30:.1f} GiB".replace(".0 GiB", " GiB")


def check_quota(
    tenant: Tenant,
    device_class_name: str,
    *,
    devices: int,
    memory_bytes: int,
    max_age: float = 0,
) -> QuotaCheck:
    """Would one more claim of ``devices`` devices and ``memory_bytes`` fit? Call it inside the
    transaction that holds the tenant's row lock (``claims.requests.services``)."""
    quota = Quota.objects.filter(tenant=tenant, device_class_name=device_class_name).first()
    usage = tenant_usage(tenant, max_age=max_age).get(device_class_name, ClassUsage())
    return judge_quota(
        tenant, device_class_name, quota, usage, devices=devices, memory_bytes=memory_bytes
    )


def judge_quota(
    tenant: Tenant,
    device_class_name: str,
    quota: Quota | None,
    usage: ClassUsage,
    *,
    devices: int,
    memory_bytes: int,
) -> QuotaCheck:
    """:func:`check_quota`'s verdict on a quota and usage the caller already read (a page
    judging many requests reads each tenant's once)."""
    check = QuotaCheck(quota, usage, devices, memory_bytes)
    if quota is None:
        check.problems.append(
            f"{tenant.name} has no quota for device class {device_class_name}; "
            "ask a portal admin for one."
        )
        return check
    if quota.max_devices is not None and usage.total_devices + devices > quota.max_devices:
        check.problems.append(
            f"Devices: {usage.total_devices} of {quota.max_devices} in use or requested; "
            f"{devices} more would exceed the quota "
            f"({max(0, quota.max_devices - usage.total_devices)} would still fit)."
        )
    if (
        quota.max_device_memory is not None
        and usage.total_memory_bytes + memory_bytes > quota.max_device_memory
    ):
        check.problems.append(
            f"Device memory: {format_gib(usage.total_memory_bytes)} of "
            f"{format_gib(quota.max_device_memory)} in use or requested; "
            f"{format_gib(memory_bytes)} more would exceed the quota "
            f"({format_gib(max(0, quota.max_device_memory - usage.total_memory_bytes))} "
            "would still fit)."
        )
    if quota.max_claims is not None and usage.total_claims + 1 > quota.max_claims:
        check.problems.append(
            f"Claims: {usage.total_claims} of {quota.max_claims} held; no more claims fit."
        )
    return check


def quota_report(tenant: Tenant) -> dict[str, QuotaCheck]:
    """Per device class the tenant has a quota for or uses: the check of asking for nothing
    more (its usage, limit and room), by class name."""
    usage = tenant_usage(tenant)
    quotas = {quota.device_class_name: quota for quota in Quota.objects.filter(tenant=tenant)}
    return {
        name: QuotaCheck(quotas.get(name), usage.get(name, ClassUsage()), 0, 0)
        for name in sorted(set(usage) | set(quotas))
        if name
    }


def _lease_reason(quota: Quota, lease: timedelta | None) -> list[str]:
    """The lease rule: a lease longer than ``approve_above_lease`` (or none at all) waits."""
    if quota.approve_above_lease is None or (
        lease is not None and lease <= quota.approve_above_lease
    ):
        return []
    asked = f"A lease of {format_duration(lease)}" if lease else "No lease (held until released)"
    return [
        f"{asked}: leases longer than {format_duration(quota.approve_above_lease)} need approval."
    ]


def _tenant_reason(tenant: Tenant) -> list[str]:
    return [f"{tenant.name} has every request approved."] if tenant.requires_approval else []


def approval_reasons(
    tenant: Tenant,
    check: QuotaCheck,
    *,
    devices: int,
    memory_bytes: int,
    lease: timedelta | None,
) -> list[str]:
    """Why a request of ``devices`` devices, ``memory_bytes`` of device memory and ``lease``
    (None: held until released) must wait for approval; empty when it need not. ``check`` is
    the quota's verdict on it (its ``quota`` carries the thresholds)."""
    reasons = _tenant_reason(tenant)
    quota = check.quota
    if quota is None:
        return reasons
    name = quota.device_class_name
    if quota.approve_above_devices is not None and devices > quota.approve_above_devices:
        reasons.append(
            f"{devices} device{'s' if devices != 1 else ''} of {name}: more than "
            f"{quota.approve_above_devices} need{'s' if quota.approve_above_devices == 1 else ''}"
            " approval."
        )
    if quota.approve_above_memory is not None and memory_bytes > quota.approve_above_memory:
        reasons.append(
            f"{format_gib(memory_bytes)} of device memory: more than "
            f"{format_gib(quota.approve_above_memory)} needs approval."
        )
    reasons += _lease_reason(quota, lease)
    if not check.fits and quota.approve_over_quota:
        reasons.append("Over quota: " + " ".join(check.problems))
    return reasons


def renewal_reasons(tenant: Tenant, quota: Quota | None, lease: timedelta) -> list[str]:
    """Why renewing a request's lease for ``lease`` (from now) must wait for approval; empty
    when it need not. A renewal holds no more devices or memory than the request already holds
    (within the thresholds, or approved), so only the tenant-wide rule and the lease rule of
    :func:`approval_reasons` apply: a renewal never gets what a new request could not."""
    reasons = _tenant_reason(tenant)
    if quota is not None:
        reasons += _lease_reason(quota, lease)
    return reasons
