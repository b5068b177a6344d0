"""What the dashboard says about the cluster.

Until the cluster mirror has data this answers ``None`` and the dashboard says that no
cluster is connected yet.
"""

from __future__ import annotations

from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser

__all__ = ["cluster_overview"]


def cluster_overview(user: AbstractBaseUser | AnonymousUser) -> dict[str, Any] | None:
    return None
