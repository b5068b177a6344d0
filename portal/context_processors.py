"""Template context shared by every page: the navigation."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.urls import NoReverseMatch, reverse
from django.utils.functional import SimpleLazyObject

from portal.models import Tenant

__all__ = ["navigation"]

# (label, url name, icon, staff only). Entries whose URL does not exist yet are left out, so the
# navigation only ever shows pages that exist.
NAVIGATION = [
    ("Dashboard", "dashboard", "speedometer2", False),
    ("Nodes", "node-list", "hdd-rack", False),
    ("Devices", "device-list", "gpu-card", False),
    ("Device classes", "deviceclass-list", "diagram-3", False),
    ("Claims", "resourceclaim-list", "ticket-detailed", False),
    ("My claims", "claimrequest-list", "inboxes", False),
    ("New claim", "claimrequest-new", "plus-circle", False),
    ("Tenants & quotas", "tenant-list", "people", False),
    ("Audit log", "auditevent-list", "journal-text", False),
    ("Mirror", "mirror-status", "arrow-repeat", True),
]
_ENTRIES = {url_name for _, url_name, _, _ in NAVIGATION}
# Entries for portal admins and tenant admins only (one query per page for other users).
FOR_ADMINS = {"auditevent-list"}


def navigation(request: HttpRequest) -> dict[str, Any]:
    # Lazy: built only when a page's layout shows it, never for htmx fragments or the tables
    # django-tables2 renders with the request (the admin entries cost a query).
    return {"navigation": SimpleLazyObject(lambda: _entries(request))}


def _entries(request: HttpRequest) -> list[dict[str, Any]]:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return []
    current = request.resolver_match.url_name if request.resolver_match else None
    items = []
    is_admin = None
    for label, url_name, icon, staff_only in NAVIGATION:
        if staff_only and not user.is_staff:
            continue
        if url_name in FOR_ADMINS:
            if is_admin is None:
                is_admin = user.is_staff or Tenant.objects.administered_by(user).exists()
            if not is_admin:
                continue
        try:
            url = reverse(url_name)
        except NoReverseMatch:
            continue
        # An entry is active on its own page, and on its siblings' pages (same URL name
        # prefix) that have no entry of their own; a "new" form only on its own page.
        active = current == url_name or (
            current is not None
            and not url_name.endswith("-new")
            and current not in _ENTRIES
            and current.split("-")[0] == url_name.split("-")[0]
        )
        items.append({"label": label, "url": url, "icon": icon, "active": active})
    return items
