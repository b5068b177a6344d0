"""Template context shared by every page: the navigation."""

from __future__ import annotations

from typing import Any

from django.core.cache import cache
from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.functional import SimpleLazyObject

from portal.models import Tenant

__all__ = ["navigation"]

EVERYONE, STAFF, APPROVERS = "everyone", "staff", "approvers"
# (label, url name, icon, who sees it: everyone signed in, portal admins only, or approvers:
# portal admins and tenant admins). Entries whose URL does not exist yet are left out, so the
# navigation only ever shows pages that exist.
NAVIGATION = [
    ("Dashboard", "dashboard", "speedometer2", EVERYONE),
    ("Nodes", "node-list", "hdd-rack", EVERYONE),
    ("Devices", "device-list", "gpu-card", EVERYONE),
    ("Device classes", "deviceclass-list", "diagram-3", EVERYONE),
    ("Sharing", "sharing", "share", EVERYONE),
    ("Fragmentation", "fragmentation", "grid-3x3-gap", EVERYONE),
    ("Idle claims", "idle-claim-list", "hourglass-split", EVERYONE),
    ("Claims", "resourceclaim-list", "ticket-detailed", EVERYONE),
    ("My claims", "claimrequest-list", "inboxes", EVERYONE),
    ("New claim", "claimrequest-new", "plus-circle", EVERYONE),
    ("Approvals", "approval-list", "check2-square", APPROVERS),
    ("Tenants & quotas", "tenant-list", "people", EVERYONE),
    ("Reports", "allocation-report", "bar-chart", EVERYONE),
    ("Audit log", "auditevent-list", "journal-text", APPROVERS),
    ("Mirror", "mirror-status", "arrow-repeat", STAFF),
    ("Telemetry", "telemetry", "activity", STAFF),
]
_ENTRIES = {url_name for _, url_name, _, _ in NAVIGATION}
# Entries shown together in one dropdown (consecutive in NAVIGATION): the bar stays one line.
GROUPS = {
    "sharing": ("Usage", "graph-up"),
    "fragmentation": ("Usage", "graph-up"),
    "idle-claim-list": ("Usage", "graph-up"),
    "tenant-list": ("Governance", "people"),
    "allocation-report": ("Governance", "people"),
    "auditevent-list": ("Governance", "people"),
    "mirror-status": ("Operations", "activity"),
    "telemetry": ("Operations", "activity"),
}
# Entries with a count badge, loaded by htmx after the page (the page itself pays nothing):
# the badge's URL name, and the event (sent with ``HX-Trigger``) on which it reloads.
_BADGES = {"approval-list": ("approval-count", "approvals-changed")}
# How long the navigation trusts "is a tenant admin" (a new tenant admin sees Approvals within
# this many seconds; the queue itself checks the role every time).
APPROVER_CACHE_SECONDS = 60


def _administers_a_tenant(user: Any) -> bool:
    """Whether to show the approvers' entries: remembered in the cache for a minute, so a
    page costs no query for it (the pages themselves check the role on every request)."""
    key = f"nav:tenant-admin:{user.pk}"
    cached = cache.get(key)
    if cached is None:
        cached = Tenant.objects.administered_by(user).exists()
        cache.set(key, cached, APPROVER_CACHE_SECONDS)
    return bool(cached)


def navigation(request: HttpRequest) -> dict[str, Any]:
    """The entries the user may see. Lazy: a fragment that shows no navigation asks nothing
    (non-staff users cost one query, whether they administer a tenant, when it is shown)."""
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"navigation": []}
    return {"navigation": SimpleLazyObject(lambda: _entries(request, user))}


def _entries(request: HttpRequest, user: Any) -> list[dict[str, Any]]:
    current = request.resolver_match.url_name if request.resolver_match else None
    items = []
    is_approver: bool | None = None  # asked at most once per page, and only of non-staff
    for label, url_name, icon, audience in NAVIGATION:
        if audience == STAFF and not user.is_staff:
            continue
        try:
            url = reverse(url_name)
            badge_url, badge_event = "", ""
            if url_name in _BADGES:
                badge_url, badge_event = reverse(_BADGES[url_name][0]), _BADGES[url_name][1]
        except NoReverseMatch:
            continue
        if audience == APPROVERS and not user.is_staff:
            if is_approver is None:
                is_approver = _administers_a_tenant(user)
            if not is_approver:
                continue
        # An entry is active on its own page, and on its siblings' pages (same URL name
        # prefix) that have no entry of their own; a "new" form only on its own page.
        active = current == url_name or (
            current is not None
            and not url_name.endswith("-new")
            and current not in _ENTRIES
            and current.split("-")[0] == url_name.split("-")[0]
        )
        group, group_icon = GROUPS.get(url_name, ("", ""))
        items.append(
            {
                "label": label,
                "url": url,
                "icon": icon,
                "active": active,
                "badge_url": badge_url,
                "badge_event": badge_event,
                "group": group,
                "group_icon": group_icon,
            }
        )
    active_groups = {item["group"] for item in items if item["active"] and item["group"]}
    for item in items:
        item["group_active"] = item["group"] in active_groups
    return items
