"""Table of the claim list (STYLE §6)."""

from __future__ import annotations

import django_tables2 as tables
from django.utils.html import format_html
from django.utils.timezone import localtime

from claims.models import ClaimIdleness, ClaimRequest, ResourceClaim
from toolkit.durations import format_duration

__all__ = [
    "ClaimRequestTable",
    "IdleClaimTable",
    "idle_badge",
    "idle_why",
    "ResourceClaimTable",
    "claim_state_badge",
    "device_count_text",
    "request_state_badge",
]

STATE_CLASSES = {
    ResourceClaim.State.PENDING: "text-bg-light border",
    ResourceClaim.State.ALLOCATED: "state-allocated",
    ResourceClaim.State.IN_USE: "state-free",
    ResourceClaim.State.DELETING: "state-tainted",
}


def claim_state_badge(claim: ResourceClaim) -> str:
    state = claim.state
    return format_html('<span class="badge {}">{}</span>', STATE_CLASSES[state], state.label)


def device_count_text(held: int, observed: int) -> str:
    """``"2"``, ``"8 (admin access)"``, ``"1 + 2 (admin access)"``: results that hold their
    device, and admin-access results, which observe a device without holding it."""
    if not observed:
        return str(held)
    if not held:
        return f"{observed} (admin access)"
    return f"{held} + {observed} (admin access)"


class ResourceClaimTable(tables.Table):
    """Claims annotated by ``ResourceClaim.objects.with_device_counts()`` (``device_count``,
    ``observed_device_count``)."""

    namespace = tables.Column(attrs={"td": {"class": "text-nowrap"}})
    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium"}})
    state = tables.Column(empty_values=(), orderable=False)
    device_count = tables.Column(
        verbose_name="Devices",
        attrs={"td": {"class": "text-end text-nowrap"}, "th": {"class": "text-end"}},
    )
    consumer_count = tables.Column(
        verbose_name="Consumers", attrs={"td": {"class": "text-end"}, "th": {"class": "text-end"}}
    )
    owner_pod = tables.Column(verbose_name="Pod")
    created_at = tables.DateTimeColumn(
        format="Y-m-d H:i", verbose_name="Created", attrs={"td": {"class": "text-nowrap"}}
    )

    class Meta:
        model = ResourceClaim
        fields = [
            "namespace",
            "name",
            "state",
            "device_count",
            "consumer_count",
            "owner_pod",
            "created_at",
        ]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No claim matches."

    def render_state(self, record: ResourceClaim) -> str:
        return claim_state_badge(record)

    def render_device_count(self, record: ResourceClaim) -> str:
        return device_count_text(record.device_count, record.observed_device_count)  # type: ignore[attr-defined]


REQUEST_STATE_CLASSES = {
    ClaimRequest.State.PENDING_APPROVAL: "text-bg-warning",
    ClaimRequest.State.SUBMITTED: "text-bg-light border",
    ClaimRequest.State.ALLOCATING: "text-bg-light border",
    ClaimRequest.State.APPLIED: "state-allocated",
    ClaimRequest.State.IN_USE: "state-free",
    ClaimRequest.State.RELEASING: "state-tainted",
    ClaimRequest.State.RELEASED: "text-bg-secondary",
    ClaimRequest.State.EXPIRED: "text-bg-secondary",
    ClaimRequest.State.FAILED: "text-bg-danger",
    ClaimRequest.State.DENIED: "text-bg-danger",
    ClaimRequest.State.WITHDRAWN: "text-bg-secondary",
}


def request_state_badge(request: ClaimRequest) -> str:
    state = ClaimRequest.State(request.state)
    return format_html(
        '<span class="badge {}" data-state="{}">{}</span>',
        REQUEST_STATE_CLASSES[state],
        state.value,
        state.label,
    )


class ClaimRequestTable(tables.Table):
    """The claim requests a user may see (My claims)."""

    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium"}})
    namespace = tables.Column(attrs={"td": {"class": "text-nowrap"}})
    state = tables.Column()
    device_class_name = tables.Column(verbose_name="Device class")
    devices = tables.Column(
        empty_values=(),
        orderable=False,
        verbose_name="Devices",
        attrs={"td": {"class": "text-end text-nowrap"}, "th": {"class": "text-end"}},
    )
    mode = tables.Column()
    expires_at = tables.DateTimeColumn(
        format="Y-m-d H:i", verbose_name="Lease ends", attrs={"td": {"class": "text-nowrap"}}
    )
    created_at = tables.DateTimeColumn(
        format="Y-m-d H:i", verbose_name="Created", attrs={"td": {"class": "text-nowrap"}}
    )

    class Meta:
        model = ClaimRequest
        fields = [
            "name",
            "namespace",
            "state",
            "device_class_name",
            "devices",
            "mode",
            "expires_at",
            "created_at",
        ]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No claim matches."

    def render_state(self, record: ClaimRequest) -> str:
        return request_state_badge(record)

    def render_devices(self, record: ClaimRequest) -> str:
        return record.count_label

    def render_expires_at(self, record: ClaimRequest, value: object) -> str:
        if record.state == ClaimRequest.State.PENDING_APPROVAL:
            # Its lease starts when it is approved: say what it asked for.
            return format_html(
                '<span class="text-body-secondary">{}</span>',
                f"{format_duration(record.lease)} from approval" if record.lease else "no lease",
            )
        if record.expires_at is None:
            return "no lease"
        ends = format_html(
            '<span title="lease {}">{}</span>',
            format_duration(record.lease) if record.lease else "",
            localtime(record.expires_at).strftime("%Y-%m-%d %H:%M"),
        )
        if record.has_pending_renewal and record.renewal_lease:
            return format_html(
                '{} <span class="badge text-bg-warning">renewal to {} waits</span>',
                ends,
                format_duration(record.renewal_lease),
            )
        return ends


def _when(moment: object) -> str:
    return localtime(moment).strftime("%Y-%m-%d %H:%M")  # type: ignore[arg-type]


def idle_why(idleness: ClaimIdleness) -> str:
    """Why the claim is idle, in words: "no consumer since …" or "under 5 % since …"."""
    if idleness.reason == ClaimIdleness.Reason.NO_CONSUMER and idleness.unused_since:
        return f"no consumer since {_when(idleness.unused_since)}"
    if idleness.reason == ClaimIdleness.Reason.LOW_UTILISATION and idleness.low_since:
        return f"under {idleness.threshold} % GPU utilisation since {_when(idleness.low_since)}"
    return ""


def idle_badge(idleness: ClaimIdleness | None) -> str:
    """The "Idle" badge of a claim (empty when it is not idle), its reason as a tooltip."""
    if idleness is None or not idleness.is_idle:
        return ""
    return format_html(
        '<span class="badge text-bg-warning" data-testid="idle-badge" title="Idle: {}">'
        '<i class="bi bi-hourglass-split me-1"></i>Idle</span>',
        idle_why(idleness),
    )


class IdleClaimTable(tables.Table):
    """Idle claims: ``ResourceClaim.objects.idle()`` with ``select_related("idleness")``."""

    namespace = tables.Column(attrs={"td": {"class": "text-nowrap"}})
    name = tables.Column(linkify=True, attrs={"td": {"class": "fw-medium"}})
    why = tables.Column(
        empty_values=(), accessor="idleness__reason", verbose_name="Why", orderable=True
    )
    idle_since = tables.DateTimeColumn(
        accessor="idleness__idle_since",
        format="Y-m-d H:i",
        verbose_name="Idle since",
        attrs={"td": {"class": "text-nowrap"}},
    )
    reclaim = tables.Column(
        empty_values=(),
        accessor="idleness__reclaim_at",
        verbose_name="Reclaim",
        attrs={"td": {"class": "text-nowrap"}},
    )

    class Meta:
        model = ResourceClaim
        fields = ["namespace", "name", "why", "idle_since", "reclaim"]
        attrs = {"class": "table table-hover align-middle mb-0"}
        empty_text = "No idle claim matches."

    def render_why(self, record: ResourceClaim) -> str:
        idleness = record.idleness
        icon = "plug" if idleness.reason == ClaimIdleness.Reason.NO_CONSUMER else "speedometer"
        return format_html('<i class="bi bi-{} me-1"></i>{}', icon, idle_why(idleness))

    def render_reclaim(self, record: ResourceClaim) -> str:
        idleness = record.idleness
        if idleness.reclaimed_at is not None:
            return format_html(
                '<span class="badge state-tainted">reclaimed {}</span>',
                _when(idleness.reclaimed_at),
            )
        if idleness.reclaim_at is None:
            return format_html('<span class="text-body-secondary">{}</span>', "off")
        if record.consumer_count:
            return format_html(
                'at {} <span class="small text-body-secondary">if no pod reserves it</span>',
                _when(idleness.reclaim_at),
            )
        return format_html("at {}", _when(idleness.reclaim_at))
