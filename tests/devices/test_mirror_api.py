"""The cluster mirror's read-only API: nodes, devices and their export, classes, slices."""

from __future__ import annotations

import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devices.models import Device
from mirror.models import MirrorStatus

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize(
    "url",
    [
        "/api/v1/nodes/",
        "/api/v1/devices/",
        "/api/v1/devices/export/",
        "/api/v1/device-classes/",
        "/api/v1/resource-slices/",
        "/api/v1/mirror-status/",
    ],
)
def test_anonymous_requests_are_refused(client, url):
    assert client.get(url).status_code in (401, 403)


def test_nodes_carry_device_counts_and_gpu_models(api_as, carol, mirrored_cluster):
    body = api_as(carol).get("/api/v1/nodes/").json()
    nodes = {node["name"]: node for node in body["results"]}
    assert nodes["dgx-h100-01"]["gpus"] == [{"model": "NVIDIA H100 80GB HBM3", "count": 8}]
    assert nodes["dgx-h100-01"]["device_count"] == 10
    assert nodes["gpu-legacy-01"]["extended_resources"] == {"nvidia.com/gpu": "4"}
    assert nodes["gpu-legacy-01"]["gpus"] == [{"model": "Tesla T4", "count": 4}]
    assert nodes["dgx-h100-01"]["allocated_count"] == 3  # gpu-3's claim is shared by two pods
    assert nodes["dgx-a100-01"]["blocked_count"] == 44
    one = api_as(carol).get("/api/v1/nodes/dgx-a100-01/").json()
    assert one["gpus"] == [{"model": "NVIDIA A100-SXM4-40GB", "count": 8}]


def test_devices_are_filtered_with_the_pages_filterset(api_as, alice, mirrored_cluster):
    client = api_as(alice)
    assert client.get("/api/v1/devices/?driver=gpu.example.com").json()["count"] == 8
    tainted = client.get("/api/v1/devices/?state=tainted").json()
    assert tainted["count"] == 1
    assert tainted["results"][0]["state"] == "tainted"
    # gpu-3 is held by a claim two pods share: allocated whole, not a capacity share.
    assert (
        client.get("/api/v1/devices/?node=dgx-h100-01&q=gpu-3").json()["results"][0]["state"]
        == "allocated"
    )


def test_the_device_list_query_count_does_not_grow_with_the_page(
    api_as, root, mirrored_cluster, django_assert_num_queries
):
    client = api_as(root)
    with CaptureQueriesContext(connection) as five:
        # five devices, one of them held (gpu-0)
        assert len(client.get("/api/v1/devices/?node=dgx-h100-01&limit=5").json()["results"]) == 5
    with CaptureQueriesContext(connection) as fifty:
        assert len(client.get("/api/v1/devices/?limit=50").json()["results"]) == 50
    assert len(five) == len(fifty)
    # count, page, allocation results, visible claims
    with django_assert_num_queries(4):
        client.get("/api/v1/devices/?limit=200")


def test_list_endpoints_cost_a_fixed_number_of_queries(
    api_as, root, mirrored_cluster, django_assert_num_queries
):
    client = api_as(root)
    # count, page, DRA GPUs by model, device-plugin GPUs
    with django_assert_num_queries(4):
        client.get("/api/v1/nodes/")
    with django_assert_num_queries(2):  # count, page (counts annotated)
        client.get("/api/v1/device-classes/")
    with django_assert_num_queries(2):
        client.get("/api/v1/resource-slices/")
    # count, page, results, consumers
    with django_assert_num_queries(4):
        client.get("/api/v1/resource-claims/")


def test_a_device_is_addressed_by_driver_pool_and_name(api_as, bob, mirrored_cluster):
    client = api_as(bob)
    url = "/api/v1/devices/gpu.nvidia.com/dgx-h100-01/gpu-0/"
    body = client.get(url).json()
    assert body["url"].endswith(url)
    assert (body["driver"], body["pool"], body["name"]) == (
        "gpu.nvidia.com",
        "dgx-h100-01",
        "gpu-0",
    )
    assert "id" not in body
    listed = client.get("/api/v1/devices/?node=dgx-h100-01&q=gpu-0").json()["results"][0]
    assert listed["url"] == body["url"]
    assert client.get("/api/v1/devices/gpu.nvidia.com/dgx-h100-01/gpu-99/").status_code == 404
    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-0", driver="gpu.nvidia.com")
    assert client.get(f"/api/v1/devices/{device.pk}/").status_code == 404


def test_the_device_api_names_holders_only_to_their_tenant(api_as, bob, carol, mirrored_cluster):
    url = "/api/v1/devices/gpu.nvidia.com/dgx-h100-01/gpu-0/"
    held_by = api_as(bob).get(url).json()["held_by"]
    assert [h["claim"] for h in held_by] == ["gpu-test1/pod1-gpu-nscrq"]
    assert held_by[0]["url"].endswith("/api/v1/resource-claims/gpu-test1/pod1-gpu-nscrq/")
    anonymous = api_as(carol).get(url).json()["held_by"]
    assert anonymous == [{"claim": None, "url": None, "request": None, "share_id": ""}]
    listed = api_as(carol).get("/api/v1/devices/?node=dgx-h100-01&q=gpu-0").json()
    assert "gpu-test1" not in json.dumps(listed)


def test_admin_access_results_observe_rather_than_hold(api_as, root, mirrored_cluster):
    device = Device.objects.get(driver="gpu.example.com", name="gpu-0")
    url = f"/api/v1/devices/{device.driver}/{device.pool_name}/{device.name}/"
    body = api_as(root).get(url).json()
    assert [h["claim"] for h in body["observed_by"]] == ["admin-access/pod0-admin-gpu-z7wjx"]
    assert all(h["claim"] != "admin-access/pod0-admin-gpu-z7wjx" for h in body["held_by"])


def test_the_export_streams_one_device_per_line(api_as, bob, mirrored_cluster):
    response = api_as(bob).get("/api/v1/devices/export/")
    assert response.status_code == 200
    assert response.streaming
    assert response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == Device.objects.count()
    first = json.loads(lines[0])
    assert {"url", "name", "driver", "pool", "state", "held_by", "attributes"} <= set(first)


def test_the_export_honours_the_list_filters(api_as, bob, mirrored_cluster):
    response = api_as(bob).get("/api/v1/devices/export/?driver=gpu.example.com")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert len(lines) == 8
    response = api_as(bob).get("/api/v1/devices/export/?node=dgx-a100-01&state=allocated")
    lines = b"".join(response.streaming_content).decode().splitlines()
    assert {json.loads(line)["state"] for line in lines} == {"allocated"}
    assert len(lines) == 8


def test_export_errors_are_json(api_as, client, bob, mirrored_cluster):
    bad = api_as(bob).get("/api/v1/devices/export/?state=bogus")
    assert bad.status_code == 400
    assert bad["Content-Type"] == "application/json"
    assert bad.json()["error"]["fields"]["state"]
    anonymous = client.get("/api/v1/devices/export/")
    assert anonymous.status_code in (401, 403)
    assert anonymous.content != b"error"
    assert anonymous.json()["error"]["code"] in ("not_authenticated", "authentication_failed")


def test_the_export_is_documented_in_the_schema(client_as, carol):
    schema = client_as(carol).get("/api/schema/").content.decode()
    assert "/api/v1/devices/export/" in schema
    assert "application/x-ndjson" in schema


def test_device_classes_and_slices_are_addressed_by_name(api_as, carol, mirrored_cluster):
    client = api_as(carol)
    device_class = client.get("/api/v1/device-classes/gpu.nvidia.com/").json()
    assert device_class["drivers"] == ["gpu.nvidia.com"]
    assert device_class["extended_resource_name"] == "nvidia.com/gpu"
    slices = client.get("/api/v1/resource-slices/?node=dgx-h100-01").json()
    assert slices["count"] == 2
    name = slices["results"][0]["name"]
    assert client.get(f"/api/v1/resource-slices/{name}/").status_code == 200


def test_mirror_status_is_for_portal_admins(api_as, carol, root):
    MirrorStatus.objects.create(kind="nodes", state=MirrorStatus.State.WATCHING)
    assert api_as(carol).get("/api/v1/mirror-status/").status_code == 403
    body = api_as(root).get("/api/v1/mirror-status/").json()
    assert [row["kind"] for row in body["results"]] == ["nodes"]
    assert api_as(root).get("/api/v1/mirror-status/nodes/").json()["state"] == "watching"
