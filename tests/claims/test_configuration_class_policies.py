"""The ``class_policies`` section of a configuration document (``claims.configuration``)."""

from __future__ import annotations

import pytest

from claims.models import ClassPolicy
from devices.models import DeviceClass
from portal.models import AuditEvent
from portal.services.configuration import (
    ConfigurationRefused,
    apply_configuration,
    current_configuration,
)


@pytest.fixture
def classes(db):
    for name in ("gpu.nvidia.com", "mig.nvidia.com"):
        DeviceClass.objects.create(uid=f"uid-{name}", name=name, resource_version="1", raw={})
    ClassPolicy.objects.create(device_class_name="mig.nvidia.com", mode="reservation")


def document(policies):
    return {
        "apiVersion": "dra-portal/v1",
        "kind": "PortalConfiguration",
        "class_policies": policies,
    }


@pytest.mark.django_db
def test_class_policies_are_planned_applied_once_and_pruned_only_when_asked(root, classes):
    assert current_configuration()["class_policies"] == {"mig.nvidia.com": "reservation"}
    wanted = document({"gpu.nvidia.com": "reservation"})
    plan = apply_configuration(actor=root, document=wanted, dry_run=True)
    assert [(c.op, c.kind, c.name) for c in plan.changes] == [
        ("create", "class_policy", "gpu.nvidia.com")
    ]
    apply_configuration(actor=root, document=wanted)
    assert ClassPolicy.objects.mode_for("gpu.nvidia.com") == "reservation"
    events = AuditEvent.objects.count()
    assert apply_configuration(actor=root, document=wanted).changes == []
    assert AuditEvent.objects.count() == events
    pruned = apply_configuration(actor=root, document=wanted, prune=True)
    assert [(c.op, c.name) for c in pruned.changes] == [("delete", "mig.nvidia.com")]
    assert ClassPolicy.objects.mode_for("mig.nvidia.com") == "scheduler"


@pytest.mark.django_db
def test_a_bad_class_policy_refuses_the_whole_document(root, classes):
    bad = document({"gpu.nvidia.com": "sometimes", "tpu.google.com": "scheduler"})
    with pytest.raises(ConfigurationRefused) as refused:
        apply_configuration(actor=root, document=bad)
    problems = dict(refused.value.problems)
    assert problems["class_policies.gpu.nvidia.com"] == "Expected a mode: scheduler, reservation."
    assert problems["class_policies.tpu.google.com"].startswith(
        "The cluster has no DeviceClass “tpu.google.com”."
    )
    assert not ClassPolicy.objects.filter(device_class_name="gpu.nvidia.com").exists()
