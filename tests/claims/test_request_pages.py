"""The self-service claim pages: My claims, New claim, one request, release and renew."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from claims.capacity.index import reset_index
from claims.models import ClaimRequest
from portal.models import AuditEvent, Quota

pytestmark = pytest.mark.django_db

GOOD = {
    "namespace": "gpu-test1",
    "name": "two-h100",
    "device_class": "gpu.nvidia.com",
    "count": "2",
    "selectors": "",
    "constraint": "pcie",
    "sharing": "claim",
    "lease": "",
}


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


def make_request(user, tenant, name="held", state=ClaimRequest.State.APPLIED, **fields):
    now = timezone.now()
    return ClaimRequest.objects.create(
        tenant=tenant,
        namespace="gpu-test1",
        name=name,
        device_class_name="gpu.nvidia.com",
        mode="scheduler",
        form={"count": 1},
        spec={"devices": {"requests": []}},
        state=state,
        requested_by=user,
        lease=timedelta(days=7),
        expires_at=now + timedelta(days=7),
        **fields,
    )


# --- My claims -------------------------------------------------------------------------------


def test_my_claims_lists_the_tenants_requests_only(client_as, bob, carol, team_a, team_b):
    make_request(bob, team_a, name="bobs-claim")
    theirs = make_request(carol, team_b, name="carols-claim")
    theirs.namespace = "team-b-prod"
    theirs.save()
    body = client_as(bob).get(reverse("claimrequest-list")).content.decode()
    assert "bobs-claim" in body
    assert "carols-claim" not in body
    assert "carols-claim" in client_as(carol).get(reverse("claimrequest-list")).content.decode()


def test_my_claims_shows_a_new_claim_button_when_empty(client_as, carol):
    body = client_as(carol).get(reverse("claimrequest-list")).content.decode()
    assert "No claims yet" in body
    assert 'data-testid="empty-new-claim"' in body


def test_my_claims_filters_by_state_and_renders_the_table_fragment_for_htmx(client_as, bob, team_a):
    make_request(bob, team_a, name="live-one")
    make_request(bob, team_a, name="gone-one", state=ClaimRequest.State.RELEASED)
    response = client_as(bob).get(
        reverse("claimrequest-list") + "?state=released", HTTP_HX_REQUEST="true"
    )
    body = response.content.decode()
    assert "<html" not in body and 'id="claimrequest-table"' in body
    assert "gone-one" in body and "live-one" not in body
    assert "HX-Request" in response["Vary"]


def test_my_claims_takes_a_fixed_number_of_queries(
    client_as, bob, team_a, django_assert_num_queries
):
    client = client_as(bob)
    for index in range(3):
        make_request(bob, team_a, name=f"claim-{index}")
    client.get(reverse("claimrequest-list"))  # warm the session and content types
    # (the warm-up also cached the navigation's "does bob administer a tenant")
    with django_assert_num_queries(5):
        client.get(reverse("claimrequest-list"))
    for index in range(3, 20):
        make_request(bob, team_a, name=f"claim-{index}")
    with django_assert_num_queries(5):
        client.get(reverse("claimrequest-list"))


def test_pages_need_a_login(client, bob, team_a):
    claim_request = make_request(bob, team_a)
    for url in (
        reverse("claimrequest-list"),
        reverse("claimrequest-new"),
        reverse("claimrequest-preview"),
        claim_request.get_absolute_url(),
    ):
        response = client.get(url)
        assert response.status_code == 302 and response["Location"].startswith("/login/"), url
    for name in ("claimrequest-release", "claimrequest-renew"):
        response = client.post(reverse(name, args=[claim_request.pk]))
        assert response.status_code == 302 and response["Location"].startswith("/login/")
    claim_request.refresh_from_db()
    assert claim_request.state == ClaimRequest.State.APPLIED


# --- New claim -------------------------------------------------------------------------------


def test_the_form_offers_the_users_namespaces_and_the_classes_with_their_mode(
    inventory, client_as, bob
):
    body = client_as(bob).get(reverse("claimrequest-new")).content.decode()
    assert 'value="gpu-test1"' in body and 'value="team-b-prod"' not in body
    assert "gpu.nvidia.com · scheduler" in body
    assert 'name="admin_access"' not in body  # portal admins only


def test_portal_admins_may_ask_for_admin_access(inventory, client_as, root):
    assert (
        'name="admin_access"' in client_as(root).get(reverse("claimrequest-new")).content.decode()
    )


def test_submitting_creates_the_request_and_redirects_to_it(inventory, client_as, bob):
    response = client_as(bob).post(reverse("claimrequest-new"), GOOD)
    claim_request = ClaimRequest.objects.get()
    assert response.status_code == 302
    assert response["Location"] == claim_request.get_absolute_url()
    assert claim_request.requested_by == bob
    assert claim_request.form["count"] == 2
    constraints = claim_request.spec["devices"]["constraints"]
    assert constraints[0]["matchAttribute"] == "resource.kubernetes.io/pcieRoot"


def test_an_htmx_submission_answers_with_hx_location(inventory, client_as, bob):
    response = client_as(bob).post(reverse("claimrequest-new"), GOOD, HTTP_HX_REQUEST="true")
    assert response.status_code == 204
    assert response["HX-Location"] == ClaimRequest.objects.get().get_absolute_url()


def test_an_alternative_row_becomes_first_available(inventory, client_as, bob):
    client_as(bob).post(
        reverse("claimrequest-new"),
        {**GOOD, "constraint": "", "alt1_device_class": "mig.nvidia.com", "alt1_count": "1"},
    )
    claim_request = ClaimRequest.objects.get()
    options = claim_request.spec["devices"]["requests"][0]["firstAvailable"]
    assert [o["deviceClassName"] for o in options] == ["gpu.nvidia.com", "mig.nvidia.com"]


@pytest.mark.parametrize(
    ("changes", "field", "message"),
    [
        ({"name": "Not_A_Name"}, "name", "Kubernetes object name"),
        ({"selectors": "device.attributes["}, "selectors", "<input>:1:"),
        ({"count": "33"}, "count", "1 to 32"),
        ({"device_class": "nope.example.com"}, "device_class", "valid choice"),
        ({"namespace": "team-b-prod"}, "namespace", "valid choice"),
        ({"lease": "30d"}, "lease", "longest lease"),
        ({"lease": "soon"}, "lease", "not a duration"),
        ({"config": "{not json"}, "config", "Not JSON"),
    ],
)
def test_bad_input_comes_back_on_the_form_and_creates_nothing(
    inventory, client_as, bob, team_a, changes, field, message
):
    Quota.objects.filter(tenant=team_a).update(max_lease=timedelta(days=7))
    response = client_as(bob).post(reverse("claimrequest-new"), {**GOOD, **changes})
    assert response.status_code == 422
    errors = response.context["form"].errors
    assert field in errors, errors
    assert any(message in error for error in errors[field]), errors[field]
    assert not ClaimRequest.objects.exists()


def test_a_request_over_quota_is_refused_with_the_reason(inventory, client_as, bob, team_a):
    Quota.objects.filter(tenant=team_a).update(max_devices=1)
    response = client_as(bob).post(reverse("claimrequest-new"), GOOD)
    assert response.status_code == 422
    assert "exceed the quota" in response.content.decode()
    assert not ClaimRequest.objects.exists()


# --- One request -----------------------------------------------------------------------------


def test_the_owner_and_teammates_see_the_request_and_other_tenants_get_404(
    client_as, alice, bob, carol, team_a
):
    claim_request = make_request(bob, team_a)
    url = claim_request.get_absolute_url()
    owner = client_as(bob).get(url)
    assert owner.status_code == 200
    assert 'data-testid="release"' in owner.content.decode()
    assert client_as(alice).get(url).status_code == 200
    assert client_as(carol).get(url).status_code == 404


def test_a_teammate_who_is_not_the_requester_sees_no_actions(client_as, alice, bob, team_a):
    claim_request = make_request(alice, team_a)
    body = client_as(bob).get(claim_request.get_absolute_url()).content.decode()
    assert "Only its requester and the tenant's admins" in body
    assert 'data-testid="release"' not in body


def test_the_detail_shows_the_timeline_the_yaml_and_polls_while_active(client_as, bob, team_a):
    claim_request = make_request(bob, team_a)
    AuditEvent.objects.create(
        actor=bob,
        actor_name="bob",
        action=AuditEvent.Action.CLAIM_STATE,
        tenant=team_a,
        object_type="claims.ClaimRequest",
        object_id=str(claim_request.pk),
        before={"state": "allocating"},
        after={"state": "applied"},
    )
    client = client_as(bob)
    body = client.get(claim_request.get_absolute_url()).content.decode()
    assert "allocating → applied" in body
    assert "kind: ResourceClaim" in body
    assert "dra-portal.io/request-id" in body
    assert 'hx-trigger="every 5s' in body
    fragment = client.get(claim_request.get_absolute_url(), HTTP_HX_REQUEST="true")
    assert 'id="request-status"' in fragment.content.decode()
    assert "<html" not in fragment.content.decode()


def test_an_ended_request_stops_polling(client_as, bob, team_a):
    claim_request = make_request(bob, team_a, state=ClaimRequest.State.RELEASED)
    body = client_as(bob).get(claim_request.get_absolute_url()).content.decode()
    assert 'hx-trigger="every 5s' not in body
    assert "nothing to release" in body


def test_a_reservation_not_yet_mirrored_links_the_devices_the_portal_wrote(client_as, bob, team_a):
    claim_request = make_request(
        bob,
        team_a,
        allocation={
            "devices": {
                "results": [
                    {
                        "request": "devices",
                        "driver": "gpu.nvidia.com",
                        "pool": "dgx-h100-01",
                        "device": "gpu-3",
                    }
                ]
            }
        },
    )
    body = client_as(bob).get(claim_request.get_absolute_url()).content.decode()
    assert 'href="/devices/gpu.nvidia.com/dgx-h100-01/gpu-3/"' in body


# --- Release and renew -----------------------------------------------------------------------


def test_the_owner_releases_the_request(client_as, bob, team_a):
    claim_request = make_request(bob, team_a)
    response = client_as(bob).post(
        reverse("claimrequest-release", args=[claim_request.pk]), {"confirm": "yes"}
    )
    assert response.status_code == 302
    claim_request.refresh_from_db()
    assert claim_request.state == ClaimRequest.State.RELEASING


def test_the_tenant_admin_may_release_a_members_request(client_as, alice, bob, team_a):
    claim_request = make_request(bob, team_a)
    client_as(alice).post(
        reverse("claimrequest-release", args=[claim_request.pk]), {"confirm": "yes"}
    )
    claim_request.refresh_from_db()
    assert claim_request.state == ClaimRequest.State.RELEASING


def test_a_member_may_not_release_a_teammates_request(client_as, alice, bob, team_a):
    claim_request = make_request(alice, team_a)
    response = client_as(bob).post(
        reverse("claimrequest-release", args=[claim_request.pk]), {"confirm": "yes"}
    )
    assert response.status_code == 403
    claim_request.refresh_from_db()
    assert claim_request.state == ClaimRequest.State.APPLIED


def test_another_tenant_cannot_release_or_renew(client_as, bob, carol, team_a, team_b):
    claim_request = make_request(bob, team_a)
    for name in ("claimrequest-release", "claimrequest-renew"):
        response = client_as(carol).post(
            reverse(name, args=[claim_request.pk]), {"lease": "1d", "confirm": "yes"}
        )
        assert response.status_code == 404
    claim_request.refresh_from_db()
    assert claim_request.state == ClaimRequest.State.APPLIED


def test_release_by_get_only_asks_for_confirmation(client_as, bob, team_a):
    claim_request = make_request(bob, team_a)
    response = client_as(bob).get(reverse("claimrequest-release", args=[claim_request.pk]))
    assert response.status_code == 200
    assert "Release this claim?" in response.content.decode()
    claim_request.refresh_from_db()
    assert claim_request.state == ClaimRequest.State.APPLIED


def test_renewing_starts_the_lease_again(client_as, bob, team_a):
    claim_request = make_request(bob, team_a)
    claim_request.expires_at = timezone.now() + timedelta(hours=1)
    claim_request.save()
    response = client_as(bob).post(
        reverse("claimrequest-renew", args=[claim_request.pk]), {"lease": "2d"}
    )
    assert response.status_code == 302
    claim_request.refresh_from_db()
    assert claim_request.lease == timedelta(days=2)
    assert claim_request.expires_at > timezone.now() + timedelta(days=1)


def test_renewing_past_the_quotas_longest_lease_is_refused(client_as, bob, team_a):
    Quota.objects.filter(tenant=team_a).update(max_lease=timedelta(days=7))
    claim_request = make_request(bob, team_a)
    before = claim_request.expires_at
    client = client_as(bob)
    response = client.post(
        reverse("claimrequest-renew", args=[claim_request.pk]), {"lease": "30d"}, follow=True
    )
    assert "The longest lease for this class is 7d" in response.content.decode()
    claim_request.refresh_from_db()
    assert claim_request.expires_at == before
