"""The admin's claim pages: class policies written through the services, requests read-only
but for the release actions."""

from __future__ import annotations

import pytest

from claims.models import AllocationMode, ClaimRequest, ClassPolicy
from claims.requests.services import submit_request
from claims.requests.specs import ClaimInput
from portal.models import AuditEvent

pytestmark = pytest.mark.django_db


def test_a_class_policy_set_in_the_admin_is_audited(client_as, root):
    response = client_as(root).post(
        "/admin/claims/classpolicy/add/",
        {"device_class_name": "gpu.nvidia.com", "mode": "reservation"},
    )
    assert response.status_code == 302, response.content
    assert ClassPolicy.objects.mode_for("gpu.nvidia.com") == AllocationMode.RESERVATION
    event = AuditEvent.objects.get(object_type="claims.ClassPolicy")
    assert event.action == AuditEvent.Action.CREATED
    assert event.after == {"device_class": "gpu.nvidia.com", "mode": "reservation"}


def test_claim_requests_are_read_only_in_the_admin(live, client_as, root, bob):
    request = submit_request(
        user=bob,
        claim=ClaimInput(namespace="gpu-test1", name="one", device_class_name="gpu.nvidia.com"),
    )
    client = client_as(root)
    assert client.get("/admin/claims/claimrequest/").status_code == 200
    assert client.get(f"/admin/claims/claimrequest/{request.pk}/change/").status_code == 200
    assert client.get("/admin/claims/claimrequest/add/").status_code == 403


def test_the_release_action_calls_the_service(live, client_as, root, bob):
    request = submit_request(
        user=bob,
        claim=ClaimInput(namespace="gpu-test1", name="one", device_class_name="gpu.nvidia.com"),
    )
    response = client_as(root).post(
        "/admin/claims/claimrequest/",
        {"action": "release", "_selected_action": [str(request.pk)]},
    )
    assert response.status_code == 302
    request.refresh_from_db()
    assert request.state == ClaimRequest.State.RELEASING
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.CLAIM_STATE, object_id=str(request.pk), actor_name="root"
    ).exists()


def test_saving_a_class_policy_twice_changes_it_once_and_records_once(db):
    from django.contrib.auth.models import AnonymousUser

    from claims.models import ClassPolicy
    from claims.requests.services import save_class_policy
    from portal.models import AuditEvent

    for _ in range(2):
        save_class_policy(
            actor=AnonymousUser(), device_class_name="gpu.nvidia.com", mode="reservation"
        )
    save_class_policy(actor=AnonymousUser(), device_class_name="gpu.nvidia.com", mode="scheduler")
    assert list(ClassPolicy.objects.values_list("device_class_name", "mode")) == [
        ("gpu.nvidia.com", "scheduler")
    ]
    assert AuditEvent.objects.filter(object_type="claims.ClassPolicy").count() == 2
