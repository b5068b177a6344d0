"""The ``class_policies`` section of a configuration document (``portal.services.configuration``):
which allocation mode each DeviceClass's self-service requests use, as on the admin's class
policy page::

    class_policies:
      gpu.nvidia.com: reservation
      mig.nvidia.com: scheduler

A class the section leaves out keeps its policy; with ``prune`` its policy is removed (its
requests go back to the scheduler mode). Applied through ``claims.requests.services``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.core.exceptions import ValidationError

from claims.models import AllocationMode, ClassPolicy
from claims.requests.services import delete_class_policy, save_class_policy
from portal.services.configuration import Change, Section
from portal.services.tenants import validate_quota

__all__ = ["CLASS_POLICIES"]

KEY = "class_policies"


def _read(value: Any, problems: list[tuple[str, str]]) -> dict[str, str]:
    if not isinstance(value, Mapping):
        problems.append(
            (KEY, "Expected a mapping of device class to mode (scheduler, reservation).")
        )
        return {}
    read: dict[str, str] = {}
    for class_name, mode in value.items():
        where = f"{KEY}.{class_name}"
        if mode not in AllocationMode.values:
            problems.append((where, f"Expected a mode: {', '.join(AllocationMode.values)}."))
            continue
        try:
            # The same class-name rule as quotas: a class the mirrored cluster lacks is refused.
            validate_quota(device_class_name=str(class_name), max_lease=None)
        except ValidationError as error:
            for messages in error.message_dict.values():
                problems.extend((where, message) for message in messages)
            continue
        read[str(class_name)] = str(mode)
    return read


def _plan(wanted: dict[str, str], prune: bool) -> list[Change]:
    current = dict(ClassPolicy.objects.values_list("device_class_name", "mode"))
    changes = []
    for class_name, mode in sorted(wanted.items()):
        if class_name not in current:
            changes.append(Change("create", "class_policy", "", class_name, {"mode": (None, mode)}))
        elif current[class_name] != mode:
            changes.append(
                Change(
                    "update", "class_policy", "", class_name, {"mode": (current[class_name], mode)}
                )
            )
    if prune:
        for class_name in sorted(set(current) - set(wanted)):
            changes.append(
                Change(
                    "delete", "class_policy", "", class_name, {"mode": (current[class_name], None)}
                )
            )
    return changes


def _apply(
    actor: User | AnonymousUser | None, wanted: dict[str, str], changes: list[Change]
) -> None:
    who = actor if actor is not None else AnonymousUser()
    for change in changes:
        if change.op == "delete":
            policy = ClassPolicy.objects.get(device_class_name=change.name)
            delete_class_policy(actor=who, policy=policy)
        else:
            save_class_policy(actor=who, device_class_name=change.name, mode=wanted[change.name])


def _export() -> dict[str, str]:
    return dict(
        ClassPolicy.objects.order_by("device_class_name").values_list("device_class_name", "mode")
    )


CLASS_POLICIES = Section(key=KEY, read=_read, plan=_plan, apply=_apply, export=_export)
