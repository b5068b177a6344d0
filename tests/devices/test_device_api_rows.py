"""The device list and export render ``.values()`` rows (``DeviceRows``), not serializer
instances: the bytes must be those ``DeviceSerializer`` and DRF's ``JSONRenderer`` give, for
every device, as every persona sees it; the export's lines are the list's items."""

from __future__ import annotations

import json

import pytest
from rest_framework.renderers import JSONRenderer
from rest_framework.request import Request
from rest_framework.test import APIRequestFactory

from devices.api import views
from devices.api.serializers import DeviceSerializer
from devices.models import Device, ResourceSlice

pytestmark = pytest.mark.django_db

URL = "/api/v1/devices/"


@pytest.fixture
def odd_device(mirrored_cluster) -> Device:
    """A device whose address and fields need escaping: a pool name with ``/``, ``+`` and a
    space, non-ASCII and U+2028 in its texts, a missing memory size."""
    slice_ = ResourceSlice.objects.create(
        uid="uid-odd",
        name="odd-slice",
        resource_version="1",
        raw={},
        driver="gpu.nvidia.com",
        pool_name="rack 1/pool+a",
        node_name="dgx-h100-01",
    )
    return Device.objects.create(
        resource_slice=slice_,
        driver="gpu.nvidia.com",
        pool_name="rack 1/pool+a",
        name="gpu-é",
        node_name="dgx-h100-01",
        model_name='Modèle \u2028 "quoted" \\ <b>',
        memory_bytes=None,
        attributes={"productName": {"string": "H100 \u2029 ünïcode"}, "index": {"int": 7}},
        capacity={"memory": {"value": "80Gi"}},
        taints=[{"key": "k", "effect": "NoSchedule"}],
        raw={},
    )


def serialized(user, query: str = "") -> bytes:
    """Every device as ``DeviceSerializer`` renders it, in the list's order, with DRF's own
    JSON renderer: what the list answered before ``DeviceRows``."""
    request = Request(APIRequestFactory().get(f"{URL}?{query}"))
    request.user = user
    devices = (
        Device.objects.select_related("resource_slice")
        .with_holders(user)
        .order_by("node_name", "driver", "pool_name", "name", "pk")
    )
    data = DeviceSerializer(devices, many=True, context={"request": request}).data
    return JSONRenderer().render(data)


@pytest.mark.parametrize("persona", ["root", "bob", "carol"])
def test_the_list_renders_every_device_as_the_serializer_does(request, api_as, persona, odd_device):
    user = request.getfixturevalue(persona)
    response = api_as(user).get(f"{URL}?limit=1000")
    body = response.json()
    assert body["count"] == len(body["results"]) == Device.objects.count()
    expected = JSONRenderer().render({**body, "results": json.loads(serialized(user))})
    # The whole answer, byte for byte: links, holders and escapes included.
    assert response.content == expected
    assert b"\\u2028" in response.content and "gpu-é".encode() in response.content
    items = json.loads(serialized(user))
    assert body["results"] == items
    odd = next(item for item in items if item["name"] == "gpu-é")
    assert odd["url"].endswith("/api/v1/devices/gpu.nvidia.com/rack%201/pool+a/gpu-%C3%A9/")
    assert api_as(user).get(odd["url"]).json() == odd


def test_the_rows_name_holders_only_to_their_tenant(api_as, bob, carol, mirrored_cluster):
    mine = api_as(bob).get(f"{URL}?limit=1000").json()["results"]
    theirs = api_as(carol).get(f"{URL}?limit=1000").json()["results"]
    held = [device for device in mine if device["held_by"]]
    assert any(
        holder["claim"] == "gpu-test1/pod1-gpu-nscrq" for d in held for holder in d["held_by"]
    )
    assert "gpu-test1" not in json.dumps(theirs)
    assert [len(d["held_by"]) for d in mine] == [len(d["held_by"]) for d in theirs]


@pytest.mark.parametrize("persona", ["bob", "carol"])
@pytest.mark.parametrize(
    "query", ["", "state=allocated", "driver=gpu.nvidia.com&ordering=-memory_bytes"]
)
def test_the_export_lines_are_the_lists_items(
    request, api_as, persona, query, odd_device, monkeypatch
):
    # Small chunks, so that the export reads many, each after the last row of the one before.
    monkeypatch.setattr(views, "EXPORT_CHUNK", 7)
    client = api_as(request.getfixturevalue(persona))
    listed = client.get(f"{URL}?limit=1000&{query}").json()["results"]
    response = client.get(f"{URL}export/?{query}")
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-ndjson"
    lines = b"".join(response.streaming_content).split(b"\n")
    assert lines[-1] == b""
    assert [json.loads(line) for line in lines[:-1]] == listed
    # Each line as the list writes the item.
    assert lines[:-1] == [JSONRenderer().render(item) for item in listed]


def test_a_tenant_member_exports_only_what_the_list_shows_them(api_as, carol, mirrored_cluster):
    response = api_as(carol).get(f"{URL}export/")
    body = b"".join(response.streaming_content).decode()
    assert "gpu-test1" not in body
    assert '"held_by":[{"claim":null,"url":null,"request":null,"share_id":""}]' in body


def test_the_browsable_api_and_indented_json_still_render_the_list(
    client_as, bob, mirrored_cluster
):
    client = client_as(bob)
    page = client.get(f"{URL}?format=api&limit=3")
    assert page.status_code == 200 and b"next_cursor" in page.content
    indented = client.get(f"{URL}?limit=3", HTTP_ACCEPT="application/json; indent=2")
    assert indented.content.startswith(b'{\n  "count": ')
    assert json.loads(indented.content) == client.get(f"{URL}?limit=3").json()
