"""Claim constraints: ``matchAttribute`` and ``distinctAttribute`` (dra-semantics §7).

A constraint sees every device picked for a request it covers, in pick order, and may refuse
it; ``remove`` undoes exactly one successful ``add`` during backtracking. Attribute values are
typed: an int never equals a bool, string or version, and versions compare as exact strings.
"""

from __future__ import annotations

from dra.features import Features
from dra.model import AttributeValue, Constraint, Device

__all__ = ["ClaimConstraint", "MatchAttribute", "DistinctAttribute"]

_SCALARS = ("int", "bool", "string", "version")


class ClaimConstraint:
    """Common part: which requests a constraint covers."""

    def __init__(self, constraint: Constraint, attribute: str) -> None:
        self.constraint = constraint
        self.attribute = attribute

    def covers(self, request: str, subrequest: str | None) -> bool:
        return self.constraint.applies_to(request, subrequest)

    def add(self, request: str, subrequest: str | None, device: Device, driver: str) -> bool:
        raise NotImplementedError

    def remove(self, request: str, subrequest: str | None, device: Device, driver: str) -> None:
        raise NotImplementedError


class MatchAttribute(ClaimConstraint):
    """All covered devices share one typed value; the first device fixes it."""

    def __init__(self, constraint: Constraint, attribute: str) -> None:
        super().__init__(constraint, attribute)
        self.value: AttributeValue | None = None
        self.count = 0

    def add(self, request: str, subrequest: str | None, device: Device, driver: str) -> bool:
        if not self.covers(request, subrequest):
            return True
        value = device.attribute(self.attribute, driver)
        if value is None:
            return False
        if self.count == 0:
            self.value = value
            self.count = 1
            return True
        if value[0] not in _SCALARS or value != self.value:
            return False
        self.count += 1
        return True

    def remove(self, request: str, subrequest: str | None, device: Device, driver: str) -> None:
        if self.covers(request, subrequest):
            self.count -= 1


class DistinctAttribute(ClaimConstraint):
    """Covered devices must have pairwise different values (version-dependent bookkeeping).

    1.34 compared attribute *pointers*, so only the very same device object counted as a
    duplicate. 1.35 and 1.36 compare values but remember one value per request name
    (upstream's ``constraint.go`` keys them by request): the last device of a request replaces
    the earlier one, and taking a device back forgets the request's value, so two devices of
    one request may share a value.
    """

    def __init__(self, constraint: Constraint, attribute: str, features: Features) -> None:
        super().__init__(constraint, attribute)
        self.version = features.version
        self.by_request: dict[str, tuple[AttributeValue, int]] = {}

    def add(self, request: str, subrequest: str | None, device: Device, driver: str) -> bool:
        if not self.covers(request, subrequest):
            return True
        value = device.attribute(self.attribute, driver)
        if value is None:
            return False
        for recorded, device_uid in self.by_request.values():
            if self.version <= (1, 34):
                if device_uid == device.uid:
                    return False
                continue
            if value[0] not in _SCALARS or value == recorded:
                return False
        self.by_request[request] = (value, device.uid)
        return True

    def remove(self, request: str, subrequest: str | None, device: Device, driver: str) -> None:
        if not self.covers(request, subrequest):
            return
        self.by_request.pop(request, None)
