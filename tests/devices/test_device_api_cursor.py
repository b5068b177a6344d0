"""The device list pages by cursor: every device once, in the list's order, at any depth,
stable while devices come and go between pages; ``limit``/``offset`` answered as before."""

from __future__ import annotations

import base64
import json

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from devices.models import Device, ResourceSlice

pytestmark = pytest.mark.django_db

URL = "/api/v1/devices/"


def everything(client, query: str = "") -> list[str]:
    """Every device's URL, in the list's order, in one page."""
    body = client.get(f"{URL}?limit=1000&{query}").json()
    assert body["next"] is None
    return [device["url"] for device in body["results"]]


def walk_forward(client, url: str) -> tuple[list[str], list[str]]:
    """URLs of every device from ``url`` on, following next_cursor then next; and the links
    of the pages read."""
    body = client.get(url).json()
    assert body["next_cursor"] is None or "cursor=" not in (body["previous"] or "")
    seen = [device["url"] for device in body["results"]]
    pages = [url]
    if body["next_cursor"] is None:
        return seen, pages
    link = f"{url}&cursor={body['next_cursor']}"
    while link:
        pages.append(link)
        body = client.get(link).json()
        assert body["next_cursor"] == (
            None if body["next"] is None else body["next"].split("cursor=")[1].split("&")[0]
        )
        seen.extend(device["url"] for device in body["results"])
        link = body["next"]
    return seen, pages


def a_device(node_name: str, name: str, **fields) -> Device:
    slice_ = ResourceSlice.objects.create(
        uid=f"uid-{node_name}-{name}",
        name=f"{node_name}-{name}",
        resource_version="1",
        raw={},
        driver="gpu.nvidia.com",
        pool_name=node_name,
        node_name=node_name,
    )
    return Device.objects.create(
        resource_slice=slice_,
        driver="gpu.nvidia.com",
        pool_name=node_name,
        name=name,
        node_name=node_name,
        raw={},
        **fields,
    )


def test_following_cursors_lists_every_device_once_in_the_lists_order(
    api_as, bob, mirrored_cluster
):
    client = api_as(bob)
    seen, pages = walk_forward(client, f"{URL}?limit=17")
    assert seen == everything(client)
    assert len(pages) == -(-Device.objects.count() // 17)


def test_previous_links_walk_back_through_the_same_pages(api_as, bob, mirrored_cluster):
    client = api_as(bob)
    _, pages = walk_forward(client, f"{URL}?limit=40")
    forward = [client.get(page).json()["results"] for page in pages]
    body = client.get(pages[-1]).json()
    backward = [body["results"]]
    while body["previous"]:
        assert "cursor=" in body["previous"] and "offset=" not in body["previous"]
        body = client.get(body["previous"]).json()
        backward.append(body["results"])
    assert backward[::-1] == forward


def test_limit_and_offset_answer_as_before_and_advertise_the_next_cursor(
    api_as, bob, mirrored_cluster
):
    client = api_as(bob)
    body = client.get(f"{URL}?limit=10&offset=20").json()
    assert body["next"].endswith("?limit=10&offset=30")
    assert body["previous"].endswith("?limit=10&offset=10")
    assert [d["url"] for d in body["results"]] == everything(client)[20:30]
    following = client.get(f"{URL}?limit=10&cursor={body['next_cursor']}").json()
    assert [d["url"] for d in following["results"]] == everything(client)[30:40]
    assert following["count"] == body["count"] == Device.objects.count()
    last = client.get(f"{URL}?limit=10&offset={body['count'] - 10}").json()
    assert last["next"] is None and last["next_cursor"] is None


def test_a_cursor_is_stable_while_devices_come_and_go(api_as, bob, mirrored_cluster):
    client = api_as(bob)
    before = client.get(f"{URL}?limit=1000").json()["results"]
    first = client.get(f"{URL}?limit=30").json()
    # Between the pages: one device added before the cursor, one among the next page's,
    # and the next page's first device deleted.
    added_before = a_device("aaa-new-node", "gpu-0")
    added_after = a_device(before[29]["node_name"], "zzz-new-gpu", state="free")
    Device.objects.get(
        driver=before[30]["driver"], pool_name=before[30]["pool"], name=before[30]["name"]
    ).delete()
    after = everything(client)
    assert after[0].endswith(f"/aaa-new-node/{added_before.name}/")
    assert before[30]["url"] not in after
    before = [device["url"] for device in before]

    second = client.get(f"{URL}?limit=30&cursor={first['next_cursor']}").json()
    urls = [device["url"] for device in second["results"]]
    # Exactly the devices after the last one seen, in today's order: nothing repeated,
    # nothing skipped, the new device after the cursor included.
    start = after.index(before[29]) + 1
    assert urls == after[start : start + 30]
    assert any(url.endswith(f"/{added_after.name}/") for url in after[start:])
    assert not set(urls) & set(before[:30])


def test_filters_and_ordering_combine_with_the_cursor(api_as, carol, mirrored_cluster):
    client = api_as(carol)
    for query in (
        "state=free&driver=gpu.nvidia.com",
        "node=dgx-a100-01&state=blocked",
        "ordering=-memory_bytes",
        "ordering=model_name,-name&driver=gpu.nvidia.com",
    ):
        seen, pages = walk_forward(client, f"{URL}?limit=9&{query}")
        assert seen == everything(client, query), query
        assert len(pages) > 1, query
    sizes = [
        Device.objects.get(pool_name=d["pool"], name=d["name"], driver=d["driver"]).memory_bytes
        for d in client.get(f"{URL}?limit=1000&ordering=-memory_bytes").json()["results"]
    ]
    known = [size for size in sizes if size is not None]
    assert known == sorted(known, reverse=True)
    assert None in sizes and sizes[sizes.index(None) :] == [None] * (len(sizes) - len(known))


@pytest.mark.parametrize(
    "cursor",
    [
        "nonsense",
        "!!!!",
        base64.urlsafe_b64encode(b"[1, 2]").decode(),
        base64.urlsafe_b64encode(b'{"o": "x", "p": 5, "b": false}').decode(),
        base64.urlsafe_b64encode(b'{"p": [], "b": false}').decode(),
        "a" * 3500,
    ],
)
def test_an_invalid_cursor_is_a_400_that_says_so(api_as, bob, mirrored_cluster, cursor):
    response = api_as(bob).get(f"{URL}?cursor={cursor}")
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["fields"]["cursor"] == [
        "Invalid cursor: use the next_cursor, next or previous of an answer as is."
    ]


def test_a_tampered_cursor_is_a_400(api_as, bob, mirrored_cluster):
    client = api_as(bob)
    cursor = client.get(f"{URL}?limit=5").json()["next_cursor"]
    document = json.loads(base64.urlsafe_b64decode(cursor + "=" * (-len(cursor) % 4)))
    for position in (document["p"][:-1], [*document["p"][:-1], "not a key"], [None] * 5):
        tampered = base64.urlsafe_b64encode(json.dumps({**document, "p": position}).encode())
        response = client.get(f"{URL}?cursor={tampered.decode()}")
        assert response.status_code == 400, position
        assert "Invalid cursor" in response.json()["error"]["message"]


def test_a_cursor_of_another_ordering_or_with_an_offset_is_a_400(api_as, bob, mirrored_cluster):
    client = api_as(bob)
    cursor = client.get(f"{URL}?limit=5").json()["next_cursor"]
    response = client.get(f"{URL}?cursor={cursor}&ordering=-name")
    assert response.status_code == 400
    assert "another ordering" in response.json()["error"]["fields"]["cursor"][0]
    response = client.get(f"{URL}?cursor={cursor}&offset=5")
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["cursor"] == ["Give either cursor or offset."]


def test_a_cursor_page_costs_the_same_queries_whatever_its_size(
    api_as, root, mirrored_cluster, django_assert_num_queries
):
    client = api_as(root)
    cursor = client.get(f"{URL}?limit=3").json()["next_cursor"]
    with CaptureQueriesContext(connection) as small:
        assert len(client.get(f"{URL}?limit=10&cursor={cursor}").json()["results"]) == 10
    with CaptureQueriesContext(connection) as large:
        assert len(client.get(f"{URL}?limit=100&cursor={cursor}").json()["results"]) == 100
    assert len(small) == len(large)
    # count, page, allocation results, visible claims
    with django_assert_num_queries(4):
        client.get(f"{URL}?limit=200&cursor={cursor}")


def test_the_schema_documents_the_cursor(client_as, carol):
    schema = client_as(carol).get("/api/schema/?format=json").json()
    operation = schema["paths"]["/api/v1/devices/"]["get"]
    parameters = {parameter["name"] for parameter in operation["parameters"]}
    assert {"cursor", "limit", "offset", "state", "driver", "ordering"} <= parameters
    page = operation["responses"]["200"]["content"]["application/json"]["schema"]["$ref"]
    component = schema["components"]["schemas"][page.rsplit("/", 1)[1]]
    assert list(component["properties"]) == ["count", "next", "previous", "next_cursor", "results"]
