"""Signals the tenancy domain sends, for apps above it that keep data derived from it.

``namespaces_changed``: sent (sender ``Tenant``, ``names``: the namespace names whose owner
changed) inside the transaction that gave, moved or took away namespaces. The claims app keeps
each mirrored claim's tenant link with it, without the portal importing the claims app.
"""

from django.dispatch import Signal

__all__ = ["namespaces_changed"]

namespaces_changed = Signal()
