"""The quotas pages: usage against every limit per device class, and quotas typed and shown as
Kubernetes quantities and durations (portal admins edit, tenant admins and members see)."""

from __future__ import annotations

import datetime as dt
import re

import pytest

from claims.models import ClaimRequest
from devices.models import DeviceClass
from portal.models import AuditEvent, Quota

GIB = 2**30


@pytest.fixture
def device_classes(db):
    for name in ("gpu.nvidia.com", "mig.nvidia.com"):
        DeviceClass.objects.get_or_create(
            name=name, defaults={"uid": f"uid-{name}", "resource_version": "1", "raw": {}}
        )


@pytest.fixture
def busy_team_a(team_a, alice, bob, mirrored_cluster):
    """team-a holds two claims of one H100 each in gpu-test1 (from the mirrored demo cluster)
    and has one request of one 80Gi device in flight, against 8 devices, 640Gi, 4 claims."""
    Quota.objects.filter(tenant=team_a).update(
        max_device_memory=640 * GIB, max_claims=4, max_lease=dt.timedelta(days=7)
    )
    ClaimRequest.objects.create(
        tenant=team_a,
        namespace="team-a-dev",
        name="waiting",
        device_class_name="gpu.nvidia.com",
        mode="scheduler",
        spec={"devices": {"requests": []}},
        state=ClaimRequest.State.SUBMITTED,
        requested_by=bob,
        held_devices=1,
        held_memory_bytes=80 * GIB,
    )
    return team_a


def _cell(content: str, testid: str) -> str:
    match = re.search(rf'data-testid="{testid}">(.*?)</td>', content, re.DOTALL)
    assert match, testid
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", match.group(1))).strip()


def test_the_quotas_page_shows_usage_held_in_flight_and_limit_for_each_measure(
    client_as, bob, busy_team_a
):
    response = client_as(bob).get("/tenants/team-a/quotas/")
    assert response.status_code == 200
    content = response.content.decode()
    # 2 × 81559Mi H100s held (163118Mi, read as 159.3Gi; exact in the tooltip); 80Gi in flight.
    assert _cell(content, "usage-devices") == "2 + 1 in flight / 8"
    assert _cell(content, "usage-memory") == "159.3Gi + 80Gi in flight / 640Gi"
    assert 'title="163118Mi"' in content
    assert _cell(content, "usage-claims") == "2 + 1 in flight / 4"
    assert _cell(content, "quota-lease") == "7d"
    assert 'class="progress w-pct-25"' in content  # 2 of 8 devices held
    assert "Quotas are set by portal admins." in content
    assert "/quotas/new/" not in content  # members cannot change quotas


def test_the_tenant_page_shows_limits_as_quantities_and_usage_bars(client_as, alice, busy_team_a):
    content = client_as(alice).get("/tenants/team-a/").content.decode()
    assert "640Gi" in content and "7d" in content
    assert str(640 * GIB) not in content
    assert 'data-testid="quota-usage"' in content
    text = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", "", content))
    assert "159.3Gi + 80Gi in flight of 640Gi" in text


def test_a_class_held_without_a_quota_shows_a_limit_of_nothing(client_as, alice, team_a):
    Quota.objects.filter(tenant=team_a).delete()
    content = client_as(alice).get("/tenants/team-a/quotas/").content.decode()
    assert "No quota yet" in content


def test_a_portal_admin_creates_a_quota_typed_as_quantities_and_durations(
    client_as, root, team_a, device_classes
):
    client = client_as(root)
    form = client.get("/tenants/team-a/quotas/new/").content.decode()
    assert '<option value="mig.nvidia.com">mig.nvidia.com</option>' in form  # mirrored classes
    response = client.post(
        "/tenants/team-a/quotas/new/",
        {
            "device_class_name": "mig.nvidia.com",
            "max_devices": "14",
            "max_device_memory": "640Gi",
            "max_claims": "7",
            "max_lease": "7d",
            "approve_above_devices": "4",
            "approve_above_memory": "80Gi",
            "approve_above_lease": "12h",
            "approve_over_quota": "on",
        },
    )
    assert response.status_code == 302
    assert response["Location"] == "/tenants/team-a/quotas/"
    quota = Quota.objects.get(tenant=team_a, device_class_name="mig.nvidia.com")
    assert (quota.max_device_memory, quota.max_lease) == (640 * GIB, dt.timedelta(days=7))
    assert (quota.approve_above_memory, quota.approve_above_lease) == (
        80 * GIB,
        dt.timedelta(hours=12),
    )
    assert quota.approve_over_quota is True
    event = AuditEvent.objects.get(object_type="portal.Quota")
    assert (event.action, event.actor) == ("created", root)
    edit = client.get(f"/tenants/team-a/quotas/{quota.pk}/edit/").content.decode()
    assert 'value="640Gi"' in edit and 'value="7d"' in edit and 'value="12h"' in edit


def test_a_bad_quantity_is_an_error_on_its_field_and_nothing_typed_is_lost(
    client_as, root, team_a, device_classes
):
    quota = Quota.objects.get(tenant=team_a)
    response = client_as(root).post(
        f"/tenants/team-a/quotas/{quota.pk}/edit/",
        {
            "device_class_name": "gpu.nvidia.com",
            "max_devices": "3",
            "max_device_memory": "640GB",
            "max_lease": "a week",
        },
    )
    assert response.status_code == 422
    content = response.content.decode()
    assert "is not a quantity: write e.g. 640Gi" in content
    assert "is not a duration: write e.g. 7d" in content
    assert 'value="640GB"' in content and 'value="a week"' in content and 'value="3"' in content
    quota.refresh_from_db()
    assert quota.max_devices == 8


def test_a_service_refusal_lands_on_its_field(client_as, root, team_a, device_classes):
    quota = Quota.objects.get(tenant=team_a)
    response = client_as(root).post(
        f"/tenants/team-a/quotas/{quota.pk}/edit/",
        {"device_class_name": "gpu.nvidia.com", "max_lease": "3651d"},
    )
    assert response.status_code == 422
    assert 'data-testid="error-max_lease"' in response.content.decode()


def test_editing_a_quota_keeps_the_approval_policy_it_shows(
    client_as, root, team_a, device_classes
):
    quota = Quota.objects.get(tenant=team_a)
    Quota.objects.filter(pk=quota.pk).update(approve_above_devices=2, approve_over_quota=True)
    client = client_as(root)
    form = client.get(f"/tenants/team-a/quotas/{quota.pk}/edit/").content.decode()
    assert 'name="approve_above_devices" value="2"' in form.replace(' class="form-control"', "")
    client.post(
        f"/tenants/team-a/quotas/{quota.pk}/edit/",
        {
            "device_class_name": "gpu.nvidia.com",
            "max_devices": "6",
            "approve_above_devices": "2",
            "approve_over_quota": "on",
        },
    )
    quota.refresh_from_db()
    assert (quota.max_devices, quota.approve_above_devices, quota.approve_over_quota) == (
        6,
        2,
        True,
    )


def test_a_portal_admin_deletes_a_quota_after_confirming(client_as, root, team_a):
    quota = Quota.objects.get(tenant=team_a)
    client = client_as(root)
    confirm = client.get(f"/tenants/team-a/quotas/{quota.pk}/delete/")
    assert confirm.status_code == 200
    assert Quota.objects.filter(pk=quota.pk).exists()
    assert client.post(f"/tenants/team-a/quotas/{quota.pk}/delete/").status_code == 302
    assert not Quota.objects.filter(pk=quota.pk).exists()
    assert AuditEvent.objects.get(object_type="portal.Quota").action == "deleted"


def test_tenant_admins_see_their_quotas_but_cannot_change_them(client_as, alice, team_a):
    quota = Quota.objects.get(tenant=team_a)
    client = client_as(alice)
    page = client.get("/tenants/team-a/quotas/").content.decode()
    assert "gpu.nvidia.com" in page and "/edit/" not in page
    assert client.get("/tenants/team-a/quotas/new/").status_code == 403
    edit = client.post(f"/tenants/team-a/quotas/{quota.pk}/edit/", {"max_devices": "99"})
    assert edit.status_code == 403
    assert client.post(f"/tenants/team-a/quotas/{quota.pk}/delete/").status_code == 403
    assert Quota.objects.get(pk=quota.pk).max_devices == 8


@pytest.mark.parametrize(
    "url",
    ["/tenants/team-a/quotas/", "/tenants/team-a/quotas/new/", "/tenants/team-a/quotas/{pk}/edit/"],
)
def test_another_tenant_gets_404_and_a_member_403_on_the_quota_forms(
    client_as, bob, carol, team_a, url
):
    url = url.format(pk=Quota.objects.get(tenant=team_a).pk)
    assert client_as(carol).get(url).status_code == 404
    expected = 200 if url.endswith("/quotas/") else 403
    assert client_as(bob).get(url).status_code == expected


def test_a_quota_of_another_tenant_is_404_under_this_tenants_url(client_as, root, team_a, team_b):
    quota_b = Quota.objects.get(tenant=team_b)
    assert client_as(root).get(f"/tenants/team-a/quotas/{quota_b.pk}/edit/").status_code == 404


def test_anonymous_visitors_are_sent_to_log_in(client, team_a):
    response = client.get("/tenants/team-a/quotas/")
    assert response.status_code == 302 and response["Location"].startswith("/login/")


def test_the_admin_takes_and_shows_quantities_and_durations(
    client_as, root, team_a, device_classes
):
    quota = Quota.objects.get(tenant=team_a)
    client = client_as(root)
    response = client.post(
        f"/admin/portal/quota/{quota.pk}/change/",
        {
            "tenant": str(team_a.pk),
            "device_class_name": "gpu.nvidia.com",
            "max_devices": "8",
            "max_device_memory": "640Gi",
            "max_lease": "7d",
            "approve_above_memory": "160Gi",
        },
    )
    assert response.status_code == 302
    quota.refresh_from_db()
    assert (quota.max_device_memory, quota.max_lease, quota.approve_above_memory) == (
        640 * GIB,
        dt.timedelta(days=7),
        160 * GIB,
    )
    form = client.get(f"/admin/portal/quota/{quota.pk}/change/").content.decode()
    assert 'value="640Gi"' in form and 'value="7d"' in form and 'value="160Gi"' in form
    bad = client.post(
        f"/admin/portal/quota/{quota.pk}/change/",
        {"tenant": str(team_a.pk), "device_class_name": "gpu.nvidia.com", "max_device_memory": "x"},
    )
    assert bad.status_code == 200
    assert "is not a quantity" in bad.content.decode()


# session, user, the tenant (gate), its quotas, its namespaces; usage adds three (claims, their
# results with device memory, requests in flight) whatever the number of claims.
@pytest.mark.parametrize(("who", "queries"), [("root", 8), ("alice", 8), ("bob", 8)])
def test_the_quotas_page_costs_a_fixed_number_of_queries(
    client_as, request, busy_team_a, django_assert_num_queries, who, queries
):
    client = client_as(request.getfixturevalue(who))
    client.get("/tenants/team-a/quotas/")  # the session is written on the first request
    with django_assert_num_queries(queries):
        assert client.get("/tenants/team-a/quotas/").status_code == 200
