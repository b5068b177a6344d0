"""The sharing page: claims several pods use, devices several claims hold, time-slicing and
MPS settings, admin-access observers; each list scoped to the user's tenants."""

from __future__ import annotations

import uuid

import pytest

from claims.models import AllocatedDevice, ResourceClaim
from claims.usage.sharing import sharing_settings
from devices.models import Device
from tests.devices.cluster_data import load_fixture_cluster
from tests.factories import TenantNamespaceFactory

pytestmark = pytest.mark.django_db

URL = "/sharing/"


@pytest.fixture
def mirrored_cluster(db):
    load_fixture_cluster()


def claim_names(response) -> set[str]:
    return {f"{row['claim'].namespace}/{row['claim'].name}" for row in response.context["rows"]}


def shared_device(*namespaces: str) -> Device:
    """The example driver's gpu-4, held by one consumable-capacity share per namespace."""
    device = Device.objects.get(node_name="dra-example-driver-cluster-worker", name="gpu-4")
    device.allow_multiple_allocations = True
    device.save()
    for index, namespace in enumerate(namespaces):
        claim = ResourceClaim.objects.create(
            uid=str(uuid.uuid4()),
            namespace=namespace,
            name=f"share-{index}",
            resource_version="1",
            raw={"metadata": {"namespace": namespace, "name": f"share-{index}"}},
            is_allocated=True,
        )
        AllocatedDevice.objects.create(
            claim=claim,
            request="gpu",
            driver=device.driver,
            pool=device.pool_name,
            device_name=device.name,
            device=device,
            share_id=f"00000000-0000-0000-0000-00000000000{index}",
            consumed_capacity={"memory": "10Gi"},
        )
    return device


def test_anonymous_visitors_are_sent_to_sign_in(client, mirrored_cluster):
    assert client.get(URL)["Location"].startswith("/login/")


def test_the_navigation_links_the_sharing_page(client_as, bob, mirrored_cluster):
    response = client_as(bob).get(URL)
    assert "Sharing" in [item["label"] for item in response.context["navigation"]]
    assert 'href="/sharing/"' in response.content.decode()


def test_a_portal_admin_sees_every_kind_of_sharing(client_as, root, mirrored_cluster):
    client = client_as(root)
    response = client.get(URL)
    assert [(name, count) for name, _, count in response.context["tabs"]] == [
        ("pods", 2),
        ("devices", 0),
        ("configs", 2),
        ("observers", 1),
    ]
    assert response.context["tab"] == "pods"
    assert claim_names(response) == {
        "gpu-test3/single-gpu",
        "basic-shared-claim-across-pods/single-gpu",
    }
    configs = client.get(f"{URL}?tab=configs")
    assert claim_names(configs) == {
        "gpu-test5/pod0-shared-gpus-krjmj",
        "gpu-test6/pod-5f7d8c9b4-kq2wz-a100-vjcmc",
    }
    content = configs.content.decode()
    assert "TimeSlicing" in content
    assert "MPS" in content
    assert "defaultActiveThreadPercentage" in content
    observers = client.get(f"{URL}?tab=observers")
    assert claim_names(observers) == {"admin-access/pod0-admin-gpu-z7wjx"}
    assert len(observers.context["rows"][0]["devices"]) == 8
    assert (
        "No device is held by several claims" in client.get(f"{URL}?tab=devices").content.decode()
    )


def test_sharing_settings_name_their_strategy_and_the_devices_they_apply_to(mirrored_cluster):
    claim = ResourceClaim.objects.get(namespace="gpu-test5", name="pod0-shared-gpus-krjmj")
    settings = sharing_settings(claim)
    assert [(s.strategy, s.requests, s.source) for s in settings] == [
        ("TimeSlicing", ["ts-gpu"], "FromClaim"),
        ("MPS", ["mps-gpu"], "FromClaim"),
    ]
    assert settings[0].settings == [("interval", "Long")]
    assert settings[1].settings == [
        ("defaultActiveThreadPercentage", "50"),
        ("defaultPinnedDeviceMemoryLimit", "10Gi"),
    ]
    assert [d.device_name for d in settings[0].devices] == ["gpu-0"]
    assert [d.device_name for d in settings[1].devices] == ["gpu-1"]
    # a pending claim's settings come from its spec
    pending = ResourceClaim.objects.get(namespace="gpu-test6")
    assert [(s.strategy, s.source, s.devices) for s in sharing_settings(pending)] == [
        ("TimeSlicing", "", [])
    ]


def test_members_see_only_their_tenants_claims(client_as, bob, carol, team_b, mirrored_cluster):
    TenantNamespaceFactory(tenant=team_b, name="gpu-test5")
    bobs = client_as(bob).get(f"{URL}?tab=configs")
    assert claim_names(bobs) == set()
    assert "No time-slicing or MPS settings" in bobs.content.decode()
    assert "pod0-shared-gpus-krjmj" not in bobs.content.decode()
    carols = client_as(carol).get(f"{URL}?tab=configs")
    assert claim_names(carols) == {"gpu-test5/pod0-shared-gpus-krjmj"}
    for tab in ("pods", "observers"):
        assert claim_names(client_as(carol).get(f"{URL}?tab={tab}")) == set()


def test_a_device_held_by_several_claims_names_only_the_visible_ones(
    client_as, bob, root, mirrored_cluster
):
    device = shared_device("gpu-test1", "team-b-prod")
    response = client_as(bob).get(f"{URL}?tab=devices")
    (row,) = response.context["rows"]
    assert row["device"] == device
    claims = [share["claim"] for share in row["shares"]]
    assert [f"{c.namespace}/{c.name}" for c in claims if c is not None] == ["gpu-test1/share-0"]
    assert claims.count(None) == 1
    content = response.content.decode()
    assert "team-b-prod" not in content
    assert "a claim in another tenant" in content
    assert "consumable capacity" in content
    assert "memory 10Gi" in content
    admin = client_as(root).get(f"{URL}?tab=devices").content.decode()
    assert "team-b-prod/share-1" in admin


def test_the_first_tab_with_entries_opens_and_a_bad_tab_is_ignored(
    client_as, bob, mirrored_cluster
):
    shared_device("gpu-test1", "gpu-test1")
    response = client_as(bob).get(URL)
    assert response.context["tab"] == "devices"
    assert client_as(bob).get(f"{URL}?tab=nope").context["tab"] == "devices"


def test_long_lists_are_paginated(client_as, root, mirrored_cluster):
    shared_device(*["gpu-test1"] * 2)
    for index in range(30):
        ResourceClaim.objects.create(
            uid=str(uuid.uuid4()),
            namespace="gpu-test1",
            name=f"many-{index:02}",
            resource_version="1",
            raw={},
            consumer_count=2,
        )
    client = client_as(root)
    first = client.get(f"{URL}?tab=pods")
    assert len(first.context["rows"]) == 25
    assert first.context["page"].paginator.count == 32
    second = client.get(f"{URL}?tab=pods&page=2")
    assert len(second.context["rows"]) == 7


def test_the_sharing_page_costs_a_fixed_number_of_queries(
    client_as, bob, root, mirrored_cluster, django_assert_num_queries
):
    shared_device("gpu-test1", "team-b-prod")
    client = client_as(root)
    # session, user, the other tabs' counts (3), the tab's count, its page, consumers, results
    with django_assert_num_queries(9):
        client.get(f"{URL}?tab=pods")
    # the other tabs' counts are remembered for a while: session, user, count, page, prefetches
    with django_assert_num_queries(6):
        client.get(f"{URL}?tab=devices")  # results, visible claims
    with django_assert_num_queries(5):
        client.get(f"{URL}?tab=configs")  # results
    with django_assert_num_queries(6):
        client.get(f"{URL}?tab=observers")  # consumers, observed results
    # a member's gate is a subquery of the same queries
    member = client_as(bob)
    member.get(URL)  # warms the navigation's cached role and the counts
    with django_assert_num_queries(6):
        member.get(f"{URL}?tab=devices")


def test_the_chosen_tab_is_always_current(client_as, bob, mirrored_cluster):
    client = client_as(bob)
    assert client.get(f"{URL}?tab=devices").context["rows"] == []
    shared_device("gpu-test1", "gpu-test1")
    response = client.get(f"{URL}?tab=devices")
    assert len(response.context["rows"]) == 1
    assert ("devices", "Devices held by several claims", 1) in response.context["tabs"]
