"""The claim requests API against a live demo cluster: create, list, get, release, renew,
usage and the dry run; isolation between tenants; every bad input a field-level 400 with
nothing recorded."""

from __future__ import annotations

import datetime as dt

import pytest
from django.utils import timezone

from claims.models import ClaimRequest, ClassPolicy
from portal.models import Quota

pytestmark = pytest.mark.django_db

REQUESTS = "/api/v1/claim-requests/"
ONE_H100 = {"namespace": "gpu-test1", "name": "one-h100", "device_class": "gpu.nvidia.com"}


def create(client, body, **headers):
    return client.post(REQUESTS, body, format="json", headers=headers)


def assert_refused(response, status, *fields):
    assert response.status_code == status, response.content
    error = response.json()["error"]
    assert error["status"] == status
    for field in fields:
        assert field in error["fields"], error
    return error


# --- happy paths ------------------------------------------------------------------------------


def test_a_member_requests_devices_and_gets_the_request_back(live, api_as, bob):
    response = create(api_as(bob), {**ONE_H100, "count": 2, "lease": "P3D"})
    assert response.status_code == 201, response.content
    body = response.json()
    assert response["Location"] == body["url"]
    assert body["tenant"] == "team-a"
    assert (body["namespace"], body["name"], body["device_class"]) == (
        "gpu-test1",
        "one-h100",
        "gpu.nvidia.com",
    )
    assert body["state"] == "submitted"
    assert body["mode"] == "scheduler"
    assert body["lease"] == "P3D"
    assert body["held_devices"] == 2
    assert body["requested_by"] == "bob"
    assert body["spec"]["devices"]["requests"][0]["exactly"]["count"] == 2
    assert body["form"]["count"] == 2
    assert ClaimRequest.objects.get().pk.hex == body["id"].replace("-", "")


def test_short_leases_are_accepted_and_answered_in_iso_8601(live, api_as, bob):
    body = create(api_as(bob), {**ONE_H100, "lease": "1d12h"}).json()
    assert body["lease"] == "P1DT12H"


def test_a_request_is_read_back_by_its_id(live, api_as, alice, bob):
    created = create(api_as(bob), ONE_H100).json()
    body = api_as(alice).get(created["url"]).json()
    assert body["id"] == created["id"]
    assert body["devices"] == [] and body["consumers"] == []


@pytest.mark.django_db(transaction=True)
def test_a_reservation_shows_its_node_and_the_mirrored_devices(live, api_as, bob):
    _, _, resync = live
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    created = create(api_as(bob), {**ONE_H100, "count": 2, "constraint": "pcie"})
    assert created.status_code == 201, created.content
    assert created.json()["state"] == "applied", created.json()["reason"]
    resync()
    body = api_as(bob).get(created.json()["url"]).json()
    assert body["node"]
    assert len(body["devices"]) == 2
    assert {device["driver"] for device in body["devices"]} == {"gpu.nvidia.com"}
    assert body["allocation"]["devices"]["results"]


def test_the_list_is_filtered_by_state_namespace_and_class(live, api_as, bob):
    client = api_as(bob)
    create(client, ONE_H100)
    create(client, {**ONE_H100, "name": "dev-box", "namespace": "team-a-dev"})
    assert client.get(REQUESTS).json()["count"] == 2
    names = {r["name"] for r in client.get(f"{REQUESTS}?namespace=team-a-dev").json()["results"]}
    assert names == {"dev-box"}
    assert client.get(f"{REQUESTS}?state=submitted").json()["count"] == 2
    assert client.get(f"{REQUESTS}?state=released").json()["count"] == 0
    assert client.get(f"{REQUESTS}?device_class=gpu.nvidia.com").json()["count"] == 2
    assert_refused(client.get(f"{REQUESTS}?state=bogus"), 400, "state")


def test_listing_a_page_of_requests_takes_a_fixed_number_of_queries(
    live, api_as, bob, django_assert_max_num_queries
):
    client = api_as(bob)
    for index in range(5):
        create(client, {**ONE_H100, "name": f"job-{index}"})
    with django_assert_max_num_queries(8):
        assert client.get(REQUESTS).json()["count"] == 5


def test_releasing_moves_the_request_to_releasing(live, api_as, bob):
    client = api_as(bob)
    created = create(client, ONE_H100).json()
    response = client.post(f"{created['url']}release/", {}, format="json")
    assert response.status_code == 200, response.content
    assert response.json()["state"] == "releasing"


def test_renewing_starts_the_lease_again_from_now(live, api_as, bob):
    client = api_as(bob)
    created = create(client, {**ONE_H100, "lease": "P1D"}).json()
    response = client.post(f"{created['url']}renew/", {"lease": "P2D"}, format="json")
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["lease"] == "P2D"
    expires = dt.datetime.fromisoformat(body["expires_at"])
    assert abs(expires - (timezone.now() + dt.timedelta(days=2))) < dt.timedelta(minutes=1)


def test_renewing_beyond_the_quotas_longest_lease_is_a_400(live, api_as, bob):
    Quota.objects.filter(device_class_name="gpu.nvidia.com").update(max_lease=dt.timedelta(days=7))
    client = api_as(bob)
    created = create(client, ONE_H100).json()
    assert created["lease"] == "P7D"  # the quota's longest when none is asked
    response = client.post(f"{created['url']}renew/", {"lease": "P8D"}, format="json")
    assert "7d" in assert_refused(response, 400, "lease")["fields"]["lease"][0]


def test_a_released_request_cannot_be_renewed(live, api_as, bob):
    client = api_as(bob)
    created = create(client, {**ONE_H100, "lease": "P1D"}).json()
    client.post(f"{created['url']}release/", {}, format="json")
    response = client.post(f"{created['url']}renew/", {}, format="json")
    assert response.status_code == 409, response.content
    assert response.json()["error"]["code"] == "conflict"


def test_usage_shows_held_in_flight_and_the_limit_per_class(live, api_as, bob):
    client = api_as(bob)
    before = client.get("/api/v1/tenants/team-a/usage/").json()
    [gpus] = [c for c in before["classes"] if c["device_class"] == "gpu.nvidia.com"]
    assert gpus["limit"]["max_devices"] == 8
    assert gpus["in_flight"]["devices"] == 0
    create(client, {**ONE_H100, "count": 2})
    after = client.get("/api/v1/tenants/team-a/usage/").json()
    [gpus_after] = [c for c in after["classes"] if c["device_class"] == "gpu.nvidia.com"]
    assert gpus_after["in_flight"] == {
        "devices": 2,
        "memory_bytes": gpus_after["in_flight"]["memory_bytes"],
        "claims": 1,
    }
    assert gpus_after["room"]["devices"] == gpus["room"]["devices"] - 2


def test_would_it_fit_places_the_request_and_records_nothing(live, api_as, bob):
    response = api_as(bob).post(
        f"{REQUESTS}would-it-fit/", {**ONE_H100, "count": 2, "constraint": "pcie"}, format="json"
    )
    assert response.status_code == 200, response.content
    body = response.json()
    assert body["fits"] is True and body["allocatable"] is True
    assert body["node"]
    assert len(body["devices"]) == 2
    assert body["quota"]["fits"] is True
    assert body["quota"]["asked"]["devices"] == 2
    assert body["quota"]["limit"]["max_devices"] == 8
    assert not ClaimRequest.objects.exists()


def test_would_it_fit_explains_why_not(live, api_as, bob):
    impossible = 'device.attributes["gpu.nvidia.com"].productName == "No Such GPU"'
    body = (
        api_as(bob)
        .post(f"{REQUESTS}would-it-fit/", {**ONE_H100, "selectors": [impossible]}, format="json")
        .json()
    )
    assert body["fits"] is False and body["node"] is None and body["devices"] == []
    assert body["explanations"]
    assert body["explanations"][0]["blockingStage"] == "selectors"


def test_would_it_fit_reports_a_request_over_quota(live, api_as, bob):
    body = api_as(bob).post(f"{REQUESTS}would-it-fit/", {**ONE_H100, "count": 9}, format="json")
    body = body.json()
    assert body["fits"] is False
    assert body["quota"]["fits"] is False
    assert "Devices:" in body["quota"]["problems"][0]


# --- idempotency ------------------------------------------------------------------------------


def test_the_same_idempotency_key_twice_makes_one_request(live, api_as, bob):
    client = api_as(bob)
    first = create(client, ONE_H100, **{"Idempotency-Key": "job-42"})
    second = create(client, ONE_H100, **{"Idempotency-Key": "job-42"})
    assert first.status_code == 201, first.content
    assert second.status_code == 200, second.content
    assert first.json()["id"] == second.json()["id"]
    assert ClaimRequest.objects.count() == 1


def test_an_idempotency_key_reused_for_another_body_is_a_422(live, api_as, bob):
    client = api_as(bob)
    create(client, ONE_H100, **{"Idempotency-Key": "job-42"})
    response = create(client, {**ONE_H100, "count": 2}, **{"Idempotency-Key": "job-42"})
    assert response.status_code == 422, response.content
    error = response.json()["error"]
    assert error["code"] == "idempotency_key_reused"
    assert "different request" in error["message"]
    assert ClaimRequest.objects.count() == 1


# --- isolation and permissions ----------------------------------------------------------------


def test_another_tenant_gets_404_for_a_request_and_its_actions(live, api_as, bob, carol):
    created = create(api_as(bob), ONE_H100).json()
    client = api_as(carol)
    for response in (
        client.get(created["url"]),
        client.post(f"{created['url']}release/", {}, format="json"),
        client.post(f"{created['url']}renew/", {}, format="json"),
        client.get("/api/v1/tenants/team-a/usage/"),
    ):
        assert response.status_code == 404, response.content
        assert response.json()["error"]["code"] == "not_found"
    assert client.get(REQUESTS).json()["count"] == 0
    assert ClaimRequest.objects.get().state == ClaimRequest.State.SUBMITTED


def test_another_tenant_cannot_request_in_team_a_namespaces(live, api_as, carol):
    assert_refused(create(api_as(carol), ONE_H100), 400, "namespace")
    assert not ClaimRequest.objects.exists()


def test_a_teammate_may_see_but_not_release_anothers_request(live, api_as, alice, bob):
    created = create(api_as(alice), ONE_H100).json()
    client = api_as(bob)
    assert client.get(created["url"]).status_code == 200
    response = client.post(f"{created['url']}release/", {}, format="json")
    assert response.status_code == 403
    assert response.json()["error"]["code"] == "permission_denied"


def test_a_tenant_admin_may_release_a_members_request(live, api_as, alice, bob):
    created = create(api_as(bob), ONE_H100).json()
    response = api_as(alice).post(f"{created['url']}release/", {}, format="json")
    assert response.json()["state"] == "releasing"


def test_admin_access_is_refused_to_non_admins(live, api_as, bob):
    assert_refused(create(api_as(bob), {**ONE_H100, "admin_access": True}), 400, "admin_access")
    assert not ClaimRequest.objects.exists()


def test_anonymous_callers_get_401(live, client):
    assert client.get(REQUESTS).status_code in (401, 403)
    assert client.post(REQUESTS, ONE_H100, content_type="application/json").status_code in (
        401,
        403,
    )


# --- bad input: a field-level 400, nothing recorded -------------------------------------------


@pytest.mark.parametrize(
    ("change", "field"),
    [
        ({"name": "Not_A_Name"}, "name"),
        ({"name": "-leading-dash"}, "name"),
        ({"selectors": ["device.attributes["]}, "selectors"),
        ({"count": 33}, "count"),
        ({"count": "many"}, "count"),
        ({"device_class": "tpu.example.com"}, "device_class"),
        ({"namespace": "team-b-prod"}, "namespace"),
        ({"lease": "P3650D1H"}, "lease"),
        ({"lease": "soon"}, "lease"),
        ({"constraint": "same-rack"}, "constraint"),
        ({"sharing": "everyone"}, "sharing"),
        ({"mode": "reservation"}, "mode"),
        ({"alternatives": [{"device_class": "gpu.nvidia.com", "count": 99}]}, "alternatives"),
        ({"config": [{"driver": "gpu.nvidia.com", "parameters": []}]}, "config"),
        ({"match_attributes": ["unqualified"]}, "match_attributes"),
    ],
)
def test_bad_input_is_a_field_level_400_with_nothing_created(live, api_as, bob, change, field):
    assert_refused(create(api_as(bob), {**ONE_H100, **change}), 400, field)
    assert not ClaimRequest.objects.exists()


def test_a_lease_above_the_quotas_maximum_is_refused(live, api_as, bob):
    Quota.objects.filter(device_class_name="gpu.nvidia.com").update(max_lease=dt.timedelta(days=7))
    error = assert_refused(create(api_as(bob), {**ONE_H100, "lease": "P8D"}), 400, "lease")
    assert "7d" in error["fields"]["lease"][0]
    assert not ClaimRequest.objects.exists()


def test_unknown_body_fields_are_refused_by_name(live, api_as, bob):
    response = create(api_as(bob), {**ONE_H100, "colour": "red", "gpus": 2})
    error = assert_refused(response, 400, "colour", "gpus")
    assert "Unknown field" in error["fields"]["colour"][0]
    nested = {**ONE_H100, "alternatives": [{"device_class": "gpu.nvidia.com", "size": 1}]}
    assert_refused(create(api_as(bob), nested), 400, "alternatives")
    release = api_as(bob).post(f"{REQUESTS}would-it-fit/", {**ONE_H100, "x": 1}, format="json")
    assert_refused(release, 400, "x")
    assert not ClaimRequest.objects.exists()


def test_a_form_encoded_body_is_a_415(live, api_as, bob):
    response = api_as(bob).post(REQUESTS, ONE_H100)
    assert response.status_code == 415


def test_a_name_already_taken_is_a_400_on_the_name(live, api_as, bob):
    client = api_as(bob)
    create(client, ONE_H100)
    assert_refused(create(client, ONE_H100), 400, "name")
    assert ClaimRequest.objects.count() == 1


def test_a_request_over_quota_is_a_409_saying_what_would_still_fit(live, api_as, bob):
    response = create(api_as(bob), {**ONE_H100, "count": 9})
    assert response.status_code == 409, response.content
    error = response.json()["error"]
    assert error["code"] == "quota_exceeded"
    assert "would exceed the quota" in error["message"]
    quota = error["details"]["quota"]
    assert quota["limit"]["max_devices"] == 8
    assert quota["asked"]["devices"] == 9
    assert quota["room"]["devices"] == 8 - quota["used"]["devices"] - quota["in_flight"]["devices"]
    assert f"({quota['room']['devices']} would still fit)" in error["message"]
    assert not ClaimRequest.objects.exists()


# --- the schema ---------------------------------------------------------------------------------


def test_the_schema_documents_every_endpoint_with_examples_and_errors(api_as, bob):
    paths = api_as(bob).get("/api/schema/?format=json").json()["paths"]
    operations = {
        ("/api/v1/claim-requests/", "get"): (),
        ("/api/v1/claim-requests/", "post"): ("409", "422"),
        ("/api/v1/claim-requests/{id}/", "get"): (),
        ("/api/v1/claim-requests/{id}/release/", "post"): ("409",),
        ("/api/v1/claim-requests/{id}/renew/", "post"): ("409",),
        ("/api/v1/claim-requests/would-it-fit/", "post"): (),
        ("/api/v1/tenants/{slug}/usage/", "get"): (),
    }
    error = {"$ref": "#/components/schemas/Error"}
    for (path, method), extra in operations.items():
        responses = paths[path][method]["responses"]
        for status in ("400", "401", "403", "404", *extra):
            assert responses[status]["content"]["application/json"]["schema"] == error
    create = paths["/api/v1/claim-requests/"]["post"]
    assert create["requestBody"]["content"]["application/json"]["examples"]
    assert create["responses"]["201"]["content"]["application/json"]["examples"]
    assert create["responses"]["409"]["content"]["application/json"]["examples"]
    assert [p["name"] for p in create["parameters"]] == ["Idempotency-Key"]
