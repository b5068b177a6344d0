"""Signals the tenancy domain sends, for apps above it that keep data derived from it.

``namespaces_changed``: sent (sender ``Tenant``, ``names``: the namespace names whose owner
changed) inside the transaction that gave, moved or took away namespaces. The claims app keeps
each mirrored claim's tenant link with it, without the portal importing the claims app.

``quotas_changed``: sent (sender ``Tenant``, ``tenant_id``) inside the transaction that created,
changed or deleted one of the tenant's quotas, or changed its namespaces or settings; apps above
(the ResourceQuota backstop) follow it. Receivers that act outside the database do so on commit.
"""

from django.dispatch import Signal

__all__ = ["namespaces_changed", "quotas_changed"]

namespaces_changed = Signal()
quotas_changed = Signal()
