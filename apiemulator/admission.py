"""ResourceQuota admission of ResourceClaims and the quota status the controller keeps (a mixin
of `Store`; the rules are `quota.py`'s)."""

from __future__ import annotations

from typing import Any

from .entries import Entry
from .history import History
from .quota import admission_error, claim_usage, computed_status
from .resources import by_kind

__all__ = ["Admission"]


class Admission(History):
    """Quota admission of claims and the quota status, for `Store`."""

    def _quotas(self, namespace: str) -> list[Entry]:
        return [
            entry
            for key, entry in sorted(self.objects[by_kind["ResourceQuota"]].items())
            if key[0] == namespace
        ]

    def _refresh_quotas(self, namespace: str, only: str | None = None) -> None:
        """The quota controller: recompute ``status`` of the namespace's ResourceQuotas (or
        of the one named ``only``) from its claims; one write per quota that changes."""
        quotas = [q for q in self._quotas(namespace) if only is None or q.key[1] == only]
        if not quotas:
            return
        claims = [
            e.obj for k, e in self.objects[by_kind["ResourceClaim"]].items() if k[0] == namespace
        ]
        for old in quotas:
            status = computed_status(old.obj, claims)
            if old.obj.get("status") == status:
                continue
            obj = {**old.obj, "metadata": dict(old.obj["metadata"]), "status": status}
            self._commit("MODIFIED", Entry.build(old.resource, obj, self._next_rv()), old)

    def _admit_claim(self, namespace: str, claim: dict[str, Any]) -> None:
        """Quota admission of a new claim: raises the 403, or charges the quotas first."""
        quotas = self._quotas(namespace)
        if not quotas:
            return
        error, updates = admission_error(
            claim["metadata"]["name"], claim_usage(claim), [q.obj for q in quotas]
        )
        if error is not None:
            raise error
        for index, used in updates:
            old = quotas[index]
            status = {**(old.obj.get("status") or {}), "used": used}
            obj = {**old.obj, "metadata": dict(old.obj["metadata"]), "status": status}
            self._commit("MODIFIED", Entry.build(old.resource, obj, self._next_rv()), old)

    def _after_quota_write(self, entry: Entry, subresource: str | None) -> None:
        """A ResourceQuota whose spec was written gets its status from the quota controller."""
        if entry.resource.kind == "ResourceQuota" and subresource is None:
            namespace, name = entry.key
            if (namespace, name) in self.objects[entry.resource]:
                self._refresh_quotas(namespace, only=name)
