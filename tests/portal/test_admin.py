"""The Django admin writes tenancy data through the services: validated, locked and audited."""

from __future__ import annotations

import datetime as dt

import pytest

from devices.models import DeviceClass
from portal.models import AuditEvent, Membership, Quota, Tenant, TenantNamespace
from tests.factories import UserFactory


@pytest.fixture
def device_classes(db):
    for name in ("gpu.nvidia.com", "mig.nvidia.com"):
        DeviceClass.objects.create(uid=f"uid-{name}", name=name, resource_version="1", raw={})


def _inline(prefix: str, rows: list[dict[str, str]], initial: int = 0) -> dict[str, str]:
    data = {
        f"{prefix}-TOTAL_FORMS": str(len(rows)),
        f"{prefix}-INITIAL_FORMS": str(initial),
        f"{prefix}-MIN_NUM_FORMS": "0",
        f"{prefix}-MAX_NUM_FORMS": "1000",
    }
    for index, row in enumerate(rows):
        data.update({f"{prefix}-{index}-{key}": value for key, value in row.items()})
    return data


def _new_tenant_form(**quota: str) -> dict[str, str]:
    return {
        "name": "Team C",
        "slug": "team-c",
        "description": "",
        **_inline("namespaces", [{"name": "team-c"}]),
        **_inline("memberships", []),
        **_inline("quotas", [{"device_class_name": "gpu.nvidia.com", "max_devices": "4", **quota}]),
    }


@pytest.mark.django_db
def test_adding_a_tenant_with_inlines_is_audited_as_the_api_would(client_as, root, device_classes):
    dana = UserFactory(username="dana")
    data = _new_tenant_form()
    data.update(_inline("memberships", [{"user": str(dana.pk), "role": "tenant_admin"}]))
    response = client_as(root).post("/admin/portal/tenant/add/", data)
    assert response.status_code == 302, response.context["errors"] if response.context else ""
    tenant = Tenant.objects.get(slug="team-c")
    assert tenant.namespace_names == ["team-c"]
    assert Membership.objects.get(tenant=tenant).user == dana
    assert Quota.objects.get(tenant=tenant).max_devices == 4
    events = AuditEvent.objects.filter(tenant=tenant).order_by("id")
    assert [(e.object_type, e.action) for e in events] == [
        ("portal.Tenant", "created"),
        ("portal.Tenant", "updated"),  # its namespace list
        ("portal.Membership", "created"),
        ("portal.Quota", "created"),
    ]
    assert {e.actor for e in events} == {root}
    assert events[1].after["namespaces"] == ["team-c"]


@pytest.mark.django_db
def test_the_admin_refuses_a_quota_for_a_class_the_cluster_does_not_have(
    client_as, root, device_classes
):
    response = client_as(root).post(
        "/admin/portal/tenant/add/", _new_tenant_form(device_class_name="gpu.nvidai.com")
    )
    assert response.status_code == 200
    assert "The cluster has no DeviceClass “gpu.nvidai.com”" in response.content.decode()
    assert not Tenant.objects.filter(slug="team-c").exists()


@pytest.mark.django_db
def test_the_admin_refuses_a_negative_lease(client_as, root, team_a):
    quota = Quota.objects.get(tenant=team_a)
    response = client_as(root).post(
        f"/admin/portal/quota/{quota.pk}/change/",
        {
            "tenant": str(team_a.pk),
            "device_class_name": "gpu.nvidia.com",
            "max_devices": "8",
            "max_lease": "-1 00:00:00",
        },
    )
    assert response.status_code == 200
    assert "A lease limit must be longer than zero" in response.content.decode()
    quota.refresh_from_db()
    assert quota.max_lease is None


@pytest.mark.django_db
def test_changing_a_quota_in_the_admin_is_audited_once(client_as, root, team_a, device_classes):
    quota = Quota.objects.get(tenant=team_a)
    response = client_as(root).post(
        f"/admin/portal/quota/{quota.pk}/change/",
        {
            "tenant": str(team_a.pk),
            "device_class_name": "gpu.nvidia.com",
            "max_devices": "2",
            "max_lease": "2 00:00:00",
        },
    )
    assert response.status_code == 302
    quota.refresh_from_db()
    assert (quota.max_devices, quota.max_lease) == (2, dt.timedelta(days=2))
    event = AuditEvent.objects.get(object_type="portal.Quota")
    assert (event.action, event.actor) == ("updated", root)
    assert (event.before["max_devices"], event.after["max_devices"]) == (8, 2)


@pytest.mark.django_db
def test_moving_a_quota_to_another_class_replaces_it(client_as, root, team_a, device_classes):
    quota = Quota.objects.get(tenant=team_a)
    response = client_as(root).post(
        f"/admin/portal/quota/{quota.pk}/change/",
        {"tenant": str(team_a.pk), "device_class_name": "mig.nvidia.com", "max_devices": "8"},
    )
    assert response.status_code == 302
    assert list(team_a.quotas.values_list("device_class_name", flat=True)) == ["mig.nvidia.com"]
    actions = AuditEvent.objects.filter(object_type="portal.Quota").order_by("id")
    assert [e.action for e in actions] == ["deleted", "created"]


@pytest.mark.django_db
def test_deleting_from_the_admin_is_audited(client_as, root, alice, bob, team_a):
    client = client_as(root)
    membership = Membership.objects.get(user=bob)  # alice, the only tenant admin, must stay
    response = client.post(f"/admin/portal/membership/{membership.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302
    quota = Quota.objects.get(tenant=team_a)
    response = client.post(
        "/admin/portal/quota/",
        {"action": "delete_selected", "_selected_action": [str(quota.pk)], "post": "yes"},
    )
    assert response.status_code == 302
    assert not Membership.objects.filter(user=bob).exists()
    assert not Quota.objects.filter(tenant=team_a).exists()
    deleted = AuditEvent.objects.filter(action="deleted").order_by("id")
    assert [e.object_type for e in deleted] == ["portal.Membership", "portal.Quota"]


@pytest.mark.django_db
def test_editing_inline_rows_of_a_tenant_goes_through_the_services(
    client_as, root, alice, team_a, device_classes
):
    namespaces = list(TenantNamespace.objects.filter(tenant=team_a).order_by("pk"))
    membership = Membership.objects.get(user=alice)
    # Another tenant admin, so that alice may be demoted (a tenant keeps one).
    Membership.objects.create(user=UserFactory(username="dana"), tenant=team_a, role="tenant_admin")
    quota = Quota.objects.get(tenant=team_a)
    data = {
        "name": "Team A",
        "slug": "team-a",
        "description": "",
        **_inline(
            "namespaces",
            [
                {"id": str(namespaces[0].pk), "tenant": str(team_a.pk), "name": "team-a-dev"},
                {
                    "id": str(namespaces[1].pk),
                    "tenant": str(team_a.pk),
                    "name": namespaces[1].name,
                    "DELETE": "on",
                },
            ],
            initial=2,
        ),
        **_inline(
            "memberships",
            [
                {
                    "id": str(membership.pk),
                    "tenant": str(team_a.pk),
                    "user": str(alice.pk),
                    "role": "member",
                }
            ],
            initial=1,
        ),
        **_inline(
            "quotas",
            [
                {
                    "id": str(quota.pk),
                    "tenant": str(team_a.pk),
                    "device_class_name": "gpu.nvidia.com",
                    "max_devices": "3",
                }
            ],
            initial=1,
        ),
    }
    response = client_as(root).post(f"/admin/portal/tenant/{team_a.pk}/change/", data)
    assert response.status_code == 302, response.context["errors"] if response.context else ""
    assert team_a.namespace_names == ["team-a-dev"]
    assert Membership.objects.get(user=alice).role == "member"
    assert Quota.objects.get(tenant=team_a).max_devices == 3
    changes = AuditEvent.objects.filter(tenant=team_a).order_by("id")
    assert [(e.object_type, e.action) for e in changes] == [
        ("portal.Tenant", "updated"),
        ("portal.Membership", "updated"),
        ("portal.Quota", "updated"),
    ]
