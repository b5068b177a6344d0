"""Meta-tests over every URL pattern (STYLE §19).

Every page needs a login, every API endpoint answers 401/403 anonymously, and another tenant's
objects are 404. A new URL with a parameter must be given a sample object below, so no URL can
be added without being checked. The API has no format-suffix spelling (``/devices.json``):
every API URL with ``.json`` appended is a clean 404, never a 500 (custom actions answered 500
to it, "unexpected keyword argument 'format'").
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, resolve, reverse

from claims.models import ClaimRequest
from devices.models import Device, ResourceSlice
from mirror.models import MirrorStatus
from portal.models import AuditEvent
from portal.services.api_tokens import issue_api_token
from tests.devices.cluster_data import load_fixture_cluster

# Signing in: the login page and the single sign-on steps (start, the provider's callback).
PUBLIC = {
    "login",
    "logout",
    "favicon",
    "oidc-authenticate",
    "oidc-callback",
    # Probes: the kubelet and load balancers have no session (they name no secret and read
    # nothing of a tenant; tests/home/test_readyz.py).
    "healthz",
    "readyz",
    # Prometheus has no session: gated by network or bearer token instead
    # (tests/home/test_metrics_endpoint.py).
    "metrics",
}
# The inventory is not tenant data: every signed-in user may read it (who holds a device is
# gated per claim, see tests/devices/test_device_pages.py).
CLUSTER_WIDE = {
    "node-detail",
    "node-topology",
    "device-detail",
    "deviceclass-detail",
    "api:node-detail",
    "api:device-detail",
    "api:node-utilisation",
    "api:device-utilisation",
    "api:deviceclass-detail",
    "api:resourceslice-detail",
    "fragmentation-node",
    "api:fragmentation-node",
}
STAFF_ONLY = {"api:mirrorstatus-detail"}
# Actions answered to POST only: the check posts to them (a GET would be a 405).
POST_ONLY = ("-revoke", "-release", "-renew", "-approve", "-deny")


def _walk(patterns: list[Any], namespace: str = "") -> Iterator[tuple[str, list[str]]]:
    for pattern in patterns:
        if isinstance(pattern, URLResolver):
            if pattern.app_name == "admin":
                continue  # Django's admin has its own login gate; checked below via its index.
            inner = f"{namespace}{pattern.namespace}:" if pattern.namespace else namespace
            yield from _walk(pattern.url_patterns, inner)
        elif isinstance(pattern, URLPattern) and pattern.name:
            yield f"{namespace}{pattern.name}", list(pattern.pattern.regex.groupindex)


def all_url_names() -> list[tuple[str, list[str]]]:
    return sorted(set((name, tuple(params)) for name, params in _walk(get_resolver().url_patterns)))


@pytest.fixture
def team_a_objects(alice, team_a):
    token = issue_api_token(user=alice, name="ci", lifetime=None).token
    event = AuditEvent.objects.create(
        actor=alice,
        actor_name="alice",
        action=AuditEvent.Action.UPDATED,
        tenant=team_a,
        object_type="portal.Tenant",
        object_id=str(team_a.pk),
        object_repr="Team A",
    )
    load_fixture_cluster()  # gpu-test1 (team-a) holds claims of the demo cluster
    MirrorStatus.objects.create(kind="nodes")
    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-0", driver="gpu.nvidia.com")
    claim_request = ClaimRequest.objects.create(
        tenant=team_a,
        namespace="gpu-test1",
        name="held",
        device_class_name="gpu.nvidia.com",
        mode="scheduler",
        spec={"devices": {"requests": []}},
        state=ClaimRequest.State.APPLIED,
        requested_by=alice,
    )
    return {
        "claim_request": claim_request.pk,
        "slug": team_a.slug,
        "token": token.pk,
        "quota": team_a.quotas.first().pk,
        "membership": team_a.memberships.get(user=alice).pk,
        "auditevent": event.pk,
        "device": device.natural_key_kwargs,
        "resource_slice": ResourceSlice.objects.filter(node_name="dgx-h100-01").first().name,
    }


def sample_kwargs(name: str, params: tuple[str, ...], objects: dict[str, Any]) -> dict[str, Any]:
    """Kwargs that point each URL at one of team-a's objects."""
    by_name = {
        "apitoken-revoke": {"pk": objects["token"]},
        "api:quota-detail": {"pk": objects["quota"]},
        "tenant-quota-edit": {"slug": objects["slug"], "pk": objects["quota"]},
        "tenant-quota-delete": {"slug": objects["slug"], "pk": objects["quota"]},
        "tenant-member": {"slug": objects["slug"], "pk": objects["membership"]},
        "tenant-member-remove": {"slug": objects["slug"], "pk": objects["membership"]},
        "api:tenant-member": {"slug": objects["slug"], "username": "alice"},
        "api:auditevent-detail": {"pk": objects["auditevent"]},
        "node-detail": {"name": "dgx-h100-01"},
        "node-topology": {"name": "dgx-h100-01"},
        "fragmentation-node": {"name": "dgx-h100-01"},
        "api:fragmentation-node": {"name": "dgx-h100-01"},
        "api:node-detail": {"name": "dgx-h100-01"},
        "device-detail": objects["device"],
        "api:device-detail": {"key": "{driver}/{pool}/{device}".format(**objects["device"])},
        "api:device-utilisation": objects["device"],
        "api:node-utilisation": {"name": "dgx-h100-01"},
        "deviceclass-detail": {"name": "gpu.nvidia.com"},
        "api:deviceclass-detail": {"name": "gpu.nvidia.com"},
        "api:resourceslice-detail": {"name": objects["resource_slice"]},
        "api:mirrorstatus-detail": {"kind": "nodes"},
        "resourceclaim-detail": {"namespace": "gpu-test1", "name": "pod1-gpu-nscrq"},
        "api:resourceclaim-detail": {"key": "gpu-test1/pod1-gpu-nscrq"},
        "api:resourceclaim-utilisation": {"key": "gpu-test1/pod1-gpu-nscrq"},
        "api:resourceclaim-why": {"key": "gpu-test1/pod1-gpu-nscrq"},
        "api:claimrequest-detail": {"pk": objects["claim_request"]},
        "api:claimrequest-release": {"pk": objects["claim_request"]},
        "api:claimrequest-renew": {"pk": objects["claim_request"]},
        "claimrequest-detail": {"pk": objects["claim_request"]},
        "claimrequest-release": {"pk": objects["claim_request"]},
        "claimrequest-renew": {"pk": objects["claim_request"]},
        "api:claimrequest-approve": {"pk": objects["claim_request"]},
        "api:claimrequest-deny": {"pk": objects["claim_request"]},
        "approval-approve": {"pk": objects["claim_request"]},
        "approval-deny": {"pk": objects["claim_request"]},
    }
    if name in by_name:
        return by_name[name]
    if params == ("slug",):
        return {"slug": objects["slug"]}
    if not params:
        return {}
    raise AssertionError(f"URL {name} takes {params}: give it a team-a object in sample_kwargs")


@pytest.mark.django_db
def test_every_url_requires_a_login(client, team_a_objects):
    checked = 0
    for name, params in all_url_names():
        if name in PUBLIC:
            continue
        url = reverse(name, kwargs=sample_kwargs(name, params, team_a_objects))
        response = client.get(url)
        if url.startswith("/api/"):
            assert response.status_code in (401, 403), f"{url} answered {response.status_code}"
        else:
            assert response.status_code == 302, f"{url} answered {response.status_code}"
            assert response["Location"].startswith(reverse("login")), url
        checked += 1
    assert checked >= 10


@pytest.mark.django_db
def test_the_admin_requires_a_portal_admin(client, client_as, carol):
    assert client.get("/admin/").status_code == 302
    assert client_as(carol).get("/admin/").status_code == 302
    assert client_as(carol).get("/admin/portal/tenant/").status_code == 302


@pytest.mark.django_db
def test_another_tenant_never_sees_team_a_objects(client_as, carol, team_a_objects):
    client = client_as(carol)
    checked = 0
    for name, params in all_url_names():
        if not params:
            continue
        url = reverse(name, kwargs=sample_kwargs(name, params, team_a_objects))
        response = client.post(url) if name.endswith(POST_ONLY) else client.get(url)
        expected = 200 if name in CLUSTER_WIDE else 403 if name in STAFF_ONLY else 404
        assert response.status_code == expected, f"{url} answered {response.status_code} to carol"
        checked += 1
    assert checked >= 3


@pytest.mark.django_db
def test_the_schema_and_api_docs_are_served_offline(client_as, carol):
    client = client_as(carol)
    schema = client.get("/api/schema/")
    assert schema.status_code == 200
    assert b"/api/v1/tenants/" in schema.content
    docs = client.get("/api/docs/")
    assert docs.status_code == 200
    assert b"/static/drf_spectacular_sidecar/" in docs.content
    assert b"cdn" not in docs.content.lower()


def test_no_api_url_takes_a_format_suffix():
    suffixed = [name for name, params in all_url_names() if "format" in params]
    assert suffixed == [], "the API router must not add format-suffix routes"


def _methods(url: str) -> list[str]:
    """The HTTP methods the view behind ``url`` answers."""
    view = resolve(url).func
    answered = getattr(view, "actions", None) or dir(view.cls)  # type: ignore[attr-defined]
    return [method for method in ("get", "post", "put", "patch", "delete") if method in answered]


@pytest.mark.django_db
def test_every_api_url_with_a_json_suffix_is_a_clean_404(client_as, root, team_a_objects):
    client = client_as(root)
    checked = 0
    for name, params in all_url_names():
        if not name.startswith("api:"):
            continue
        url = reverse(name, kwargs=sample_kwargs(name, params, team_a_objects))
        for method in _methods(url):
            suffixed = url.rstrip("/") + ".json"
            response = getattr(client, method)(suffixed, {}, content_type="application/json")
            where = f"{method.upper()} {suffixed} answered {response.status_code}"
            if response.status_code == 301:
                # A dotted name (a node's DNS name) with the slash added is another URL.
                assert response["Location"].endswith(suffixed + "/"), where
                continue
            assert response.status_code == 404, where
            assert response.json()["error"]["code"] == "not_found", where
            checked += 1
    assert checked >= 40
