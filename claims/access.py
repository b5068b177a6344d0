"""The single-object gate for claims (STYLE §3): nothing else fetches a claim by name."""

from __future__ import annotations

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.http import Http404

from claims.models import ResourceClaim

__all__ = ["get_claim_for_user"]


def get_claim_for_user(
    user: AbstractBaseUser | AnonymousUser, namespace: str, name: str
) -> ResourceClaim:
    """The claim ``namespace/name`` if ``user`` may see it; ``Http404`` otherwise, so that a
    claim in another tenant's namespace is indistinguishable from one that does not exist."""
    claim = ResourceClaim.objects.visible_to(user).filter(namespace=namespace, name=name).first()
    if claim is None:
        raise Http404("No such claim.")
    return claim
