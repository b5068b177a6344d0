"""Configuration as code: a tenancy document planned and applied whole
(``portal.services.configuration``, ``POST /api/v1/configuration/``)."""

from __future__ import annotations

import copy
import datetime as dt

import pytest

from devices.models import DeviceClass
from portal.models import AuditEvent, Membership, Quota, Tenant
from portal.services.configuration import (
    ConfigurationRefused,
    apply_configuration,
    current_configuration,
)

URL = "/api/v1/configuration/"


@pytest.fixture
def classes(db):
    for name in ("gpu.nvidia.com", "mig.nvidia.com"):
        DeviceClass.objects.create(uid=f"uid-{name}", name=name, resource_version="1", raw={})


def document(**overrides):
    team_a = {
        "slug": "team-a",
        "name": "Team A",
        "namespaces": ["team-a-dev", "gpu-test1"],
        "members": {"alice": "tenant_admin", "bob": "member"},
        "quotas": {"gpu.nvidia.com": {"max_devices": 8}},
    }
    team_a.update(overrides)
    return {"apiVersion": "dra-portal/v1", "kind": "PortalConfiguration", "tenants": [team_a]}


@pytest.mark.django_db
def test_the_current_configuration_applied_back_changes_nothing(alice, bob, carol, root, classes):
    events = AuditEvent.objects.count()
    outcome = apply_configuration(actor=root, document=current_configuration(), prune=True)
    assert outcome.changes == [] and not outcome.applied
    assert AuditEvent.objects.count() == events


@pytest.mark.django_db
def test_a_document_applies_once_and_a_second_apply_changes_and_records_nothing(
    alice, bob, carol, root, classes
):
    wanted = document(
        description="Vision team",
        max_token_lifetime="30d",
        namespaces=["team-a-dev", "gpu-test1", "team-a-train"],
        members={"alice": "tenant_admin", "bob": "tenant_admin", "carol": "member"},
        quotas={
            "gpu.nvidia.com": {"max_devices": 16, "max_device_memory": "640Gi", "max_lease": "7d"},
            "mig.nvidia.com": {"max_devices": 4, "approve_above_devices": 2},
        },
    )
    wanted["tenants"].append({"slug": "team-c", "name": "Team C", "namespaces": ["team-c-dev"]})
    plan = apply_configuration(actor=root, document=wanted, dry_run=True)
    assert not plan.applied
    assert {(c.op, c.kind, c.tenant, c.name) for c in plan.changes} == {
        ("update", "tenant", "team-a", "team-a"),
        ("create", "namespace", "team-a", "team-a-train"),
        ("update", "member", "team-a", "bob"),
        ("create", "member", "team-a", "carol"),
        ("update", "quota", "team-a", "gpu.nvidia.com"),
        ("create", "quota", "team-a", "mig.nvidia.com"),
        ("create", "tenant", "team-c", "team-c"),
        ("create", "namespace", "team-c", "team-c-dev"),
    }
    assert not Tenant.objects.filter(slug="team-c").exists()  # a plan changes nothing

    applied = apply_configuration(actor=root, document=wanted)
    assert applied.applied and applied.changes == plan.changes
    team_a = Tenant.objects.get(slug="team-a")
    assert team_a.description == "Vision team"
    assert team_a.max_token_lifetime == dt.timedelta(days=30)
    assert sorted(team_a.namespace_names) == ["gpu-test1", "team-a-dev", "team-a-train"]
    assert Membership.objects.get(tenant=team_a, user=bob).role == "tenant_admin"
    gpu = Quota.objects.get(tenant=team_a, device_class_name="gpu.nvidia.com")
    assert (gpu.max_devices, gpu.max_device_memory, gpu.max_lease) == (
        16,
        640 * 2**30,
        dt.timedelta(days=7),
    )
    assert Tenant.objects.get(slug="team-c").namespace_names == ["team-c-dev"]
    summary = AuditEvent.objects.get(action=AuditEvent.Action.CONFIGURATION_APPLIED)
    assert summary.actor == root and len(summary.after["changes"]) == 8

    events = AuditEvent.objects.count()
    again = apply_configuration(actor=root, document=copy.deepcopy(wanted))
    assert again.changes == [] and not again.applied
    assert AuditEvent.objects.count() == events


@pytest.mark.django_db
def test_removals_happen_only_with_prune(alice, bob, carol, root, classes):
    smaller = document(namespaces=["gpu-test1"], members={"alice": "tenant_admin"}, quotas={})
    assert apply_configuration(actor=root, document=smaller).changes == []
    plan = apply_configuration(actor=root, document=smaller, prune=True, dry_run=True)
    assert {(c.op, c.kind, c.name) for c in plan.changes} == {
        ("delete", "namespace", "team-a-dev"),
        ("delete", "member", "bob"),
        ("delete", "quota", "gpu.nvidia.com"),
        ("delete", "tenant", "team-b"),  # not in the document at all
    }
    apply_configuration(actor=root, document=smaller, prune=True)
    team_a = Tenant.objects.get(slug="team-a")
    assert team_a.namespace_names == ["gpu-test1"]
    assert list(team_a.memberships.values_list("user__username", flat=True)) == ["alice"]
    assert not team_a.quotas.exists()
    assert not Tenant.objects.filter(slug="team-b").exists()


@pytest.mark.django_db
def test_a_namespace_moves_between_tenants_in_one_document_with_prune(
    alice, bob, carol, root, classes
):
    moved = document(namespaces=["team-a-dev", "gpu-test1", "team-b-prod"])
    moved["tenants"].append({"slug": "team-b", "namespaces": [], "members": {"carol": "member"}})
    with pytest.raises(ConfigurationRefused) as refused:
        apply_configuration(actor=root, document=moved)  # without prune team-b keeps it
    assert refused.value.problems == [
        ("tenants[0].namespaces", "Namespace team-b-prod already belongs to tenant team-b.")
    ]
    apply_configuration(actor=root, document=moved, prune=True)
    assert "team-b-prod" in Tenant.objects.get(slug="team-a").namespace_names
    assert Tenant.objects.get(slug="team-b").namespace_names == []


@pytest.mark.django_db
def test_a_bad_document_is_refused_whole_with_every_problem(alice, bob, root, classes):
    bad = document(
        colour="blue",
        members={"alice": "tenant_admin", "nobody": "member", "bob": "owner"},
        quotas={
            "tpu.google.com": {"max_devices": 1},
            "gpu.nvidia.com": {"max_devices": -1, "max_lease": "forever", "max_gpus": 3},
        },
    )
    bad["tenants"].append({"slug": "team-c", "namespaces": ["team-c-dev"]})
    before = current_configuration()
    events = AuditEvent.objects.count()
    with pytest.raises(ConfigurationRefused) as refused:
        apply_configuration(actor=root, document=bad)
    problems = dict(refused.value.problems)
    assert problems["tenants[0].colour"] == "Unknown field."
    assert problems["tenants[0].members.bob"] == "Expected a role: member, tenant_admin."
    assert problems["tenants[0].quotas.tpu.google.com"].startswith(
        "The cluster has no DeviceClass “tpu.google.com”."
    )
    assert problems["tenants[0].quotas.gpu.nvidia.com.max_gpus"] == "Unknown field."
    assert "whole number" in problems["tenants[0].quotas.gpu.nvidia.com.max_devices"]
    assert "is not a duration" in problems["tenants[0].quotas.gpu.nvidia.com.max_lease"]
    # Every problem at once: the fields, then the users and tenants they name.
    assert problems["tenants[0].members.nobody"] == "There is no user named “nobody”."
    assert problems["tenants[1].name"] == "A new tenant needs a name."
    assert len(refused.value.problems) == 8
    with pytest.raises(ConfigurationRefused) as refused:
        apply_configuration(actor=root, document={"kind": "PortalConfiguration", "tenants": {}})
    assert refused.value.problems == [
        ("apiVersion", "Expected 'dra-portal/v1'."),
        ("tenants", "Expected a list of tenants."),
    ]
    assert current_configuration() == before and AuditEvent.objects.count() == events


@pytest.mark.django_db
def test_a_service_refusal_mid_apply_rolls_everything_back(alice, bob, root, classes):
    # Demoting the last tenant admin is refused by the services, after other changes ran.
    demoted = document(members={"alice": "member", "bob": "member"}, description="changed")
    with pytest.raises(ConfigurationRefused) as refused:
        apply_configuration(actor=root, document=demoted)
    assert refused.value.problems[0][0] == "tenants[0].members.alice"
    assert Tenant.objects.get(slug="team-a").description == ""


@pytest.mark.django_db
def test_the_api_is_for_portal_admins_and_answers_the_plan_and_the_problems(
    api_as, alice, bob, root, classes
):
    assert api_as(alice).get(URL).status_code == 403
    assert api_as(alice).post(URL, {"document": document()}, format="json").status_code == 403
    exported = api_as(root).get(URL).json()
    assert exported["tenants"][0]["slug"] == "team-a"
    body = {"document": document(quotas={"gpu.nvidia.com": {"max_devices": 9}}), "dry_run": True}
    answer = api_as(root).post(URL, body, format="json")
    assert answer.status_code == 200, answer.json()
    assert answer.json() == {
        "applied": False,
        "changes": [
            {
                "op": "update",
                "kind": "quota",
                "tenant": "team-a",
                "name": "gpu.nvidia.com",
                "values": {"max_devices": {"before": 8, "after": 9}},
            }
        ],
    }
    refused = api_as(root).post(URL, {"document": document(colour=1), "prun": True}, format="json")
    assert refused.status_code == 400
    assert refused.json()["error"]["fields"] == {"prun": ["Unknown field."]}
    refused = api_as(root).post(URL, {"document": document(colour=1)}, format="json")
    error = refused.json()["error"]
    assert (refused.status_code, error["code"]) == (400, "invalid_configuration")
    assert error["details"]["problems"] == [
        {"path": "tenants[0].colour", "message": "Unknown field."}
    ]
    assert "nothing changed" in error["message"]
