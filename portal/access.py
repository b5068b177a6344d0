"""Single-object permission gates of the tenancy domain (STYLE §3).

Nothing else fetches a tenant by its identifier for a user. An object the user may not see is
a 404 (its existence is not revealed); one they may see but not change is a 403.
"""

from __future__ import annotations

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import PermissionDenied
from django.http import Http404

from portal.models import Tenant

__all__ = ["get_tenant_for_user"]


def get_tenant_for_user(user: User | AnonymousUser, slug: str, *, write: bool = False) -> Tenant:
    tenant = Tenant.objects.visible_to(user).filter(slug=slug).first()
    if tenant is None:
        raise Http404("No such tenant.")
    if write and not Tenant.objects.administered_by(user).filter(pk=tenant.pk).exists():
        raise PermissionDenied("Only tenant admins and portal admins may change this tenant.")
    return tenant
