"""The dashboard's cluster card, once the mirror has rows."""

from __future__ import annotations

import pytest

from home.overview import cluster_overview

pytestmark = pytest.mark.django_db


def test_without_mirrored_rows_the_dashboard_says_no_cluster_is_connected(client_as, alice):
    assert cluster_overview(alice) is None
    assert b"No cluster connected yet" in client_as(alice).get("/").content


def test_the_dashboard_summarises_the_cluster(client_as, alice, mirrored_cluster):
    overview = cluster_overview(alice)
    assert overview is not None
    assert overview["node_count"] == 5
    assert {g["model_name"]: g["count"] for g in overview["gpus"]}["NVIDIA H100 80GB HBM3"] == 16
    assert overview["tainted_count"] == 1
    content = client_as(alice).get("/").content.decode()
    assert "No cluster connected yet" not in content
    assert "GPUs by model" in content


def test_claim_counts_are_those_the_user_may_see(alice, carol, root, mirrored_cluster):
    assert cluster_overview(alice)["claims"] == {
        "total": 2,
        "pending": 0,
        "allocated": 2,
        "idle": 0,
    }
    assert cluster_overview(carol)["claims"]["total"] == 0
    assert cluster_overview(root)["claims"]["total"] == 13


def test_the_dashboards_device_counts_add_up_and_match_their_links(
    client_as, root, mirrored_cluster
):
    from devices.models import Device

    cluster = client_as(root).get("/").context["cluster"]
    parts = ("free_count", "allocated_count", "shared_count", "blocked_count", "tainted_count")
    assert sum(cluster[p] for p in parts) == cluster["device_count"] == Device.objects.count()
    for part in parts:
        state = part.removesuffix("_count")
        listed = client_as(root).get(f"/devices/?state={state}").context["table"].paginator.count
        assert listed == cluster[part], state


def test_the_dashboard_counts_legacy_device_plugin_gpus_by_model(
    client_as, alice, mirrored_cluster
):
    gpus = {
        g["model_name"]: g["count"] for g in client_as(alice).get("/").context["cluster"]["gpus"]
    }
    assert gpus["Tesla T4"] == 4
    assert gpus["NVIDIA H100 80GB HBM3"] == 16
    content = client_as(alice).get("/").content.decode()
    assert "Tesla T4" in content


def test_the_dashboard_and_node_list_count_states_alike(client_as, root, mirrored_cluster):
    client = client_as(root)
    cluster = client.get("/").context["cluster"]
    nodes = list(client.get("/nodes/?per_page=500").context["table"].data)
    for state in ("free", "allocated", "shared", "tainted"):
        on_nodes = sum(getattr(node, f"{state}_count") for node in nodes)
        from devices.models import Device

        off_nodes = Device.objects.filter(node_name="", state=state).count()
        assert on_nodes + off_nodes == cluster[f"{state}_count"], state


def test_the_dashboard_costs_a_fixed_number_of_queries(
    client_as, alice, mirrored_cluster, django_assert_num_queries
):
    client = client_as(alice)
    client.get("/")  # the process's allocation index is built once (usage estimates use it)
    # session, user, whether alice is in a tenant, tenants (2: the page and their namespaces),
    # tenant count, quota count,
    # token count, the inventory's version (nodes, device states and GPUs by model are kept from
    # the warm-up until it moves), device-plugin GPUs, the claims' version (their counts kept
    # likewise), idle claims,
    # the mirror's stale kinds and its health, telemetry (readings, sources; devices by class
    # are cached from the warm-up), the tenants' 24 h
    # of GPU utilisation and the devices their claims hold now; usage against quota per tenant
    # shown (at most 3 tenants):
    # claims, their results with device memory, requests, quotas and the warm index's
    # catch-up (the warm-up read the claims' specs, which are parsed once per version, and
    # cached the navigation's "does alice administer a tenant")
    with django_assert_num_queries(22):
        client.get("/")


def test_the_cluster_card_and_the_mirror_banner_refresh_by_themselves(
    client_as, bob, mirrored_cluster, django_assert_num_queries
):
    from mirror.models import MirrorStatus

    MirrorStatus.objects.create(kind="resourceslices", state=MirrorStatus.State.WATCHING)
    client = client_as(bob)
    assert 'id="cluster-live"' in client.get("/").content.decode()
    # session, user, whether bob is in a tenant (else the no-tenant page), the inventory's
    # version (its counts kept from the first view), device-plugin
    # GPUs, the claims' version (counts kept), idle claims, stale kinds, mirror health, telemetry
    # (readings, sources): the card only, not the tenants and tokens around it
    with django_assert_num_queries(11):
        body = client.get("/", headers={"HX-Request": "true"}).content.decode()
    assert "<html" not in body and "GPUs by model" in body
    assert 'id="mirror-banner" hx-swap-oob="true"' in body
    assert "Cluster data may be out of date" in body  # never heard from: very stale


def test_the_dashboard_shows_utilisation_and_stale_telemetry(client_as, bob, mirrored_cluster):
    import datetime

    from django.utils import timezone

    from devices.models import DeviceTelemetry, TelemetrySource
    from devices.telemetry.ingest import ingest_source

    page = client_as(bob).get("/").content.decode()
    assert "No telemetry source configured" in page and "Telemetry: no source configured" in page

    source = TelemetrySource.objects.create(name="demo", kind="simulated")
    ingest_source(source)
    page = client_as(bob).get("/").content.decode()
    assert "on average on the devices claims hold" in page and ">simulated<" in page
    assert "Telemetry: 1 source reading, last cycle" in page

    TelemetrySource.objects.update(last_success_at=timezone.now() - datetime.timedelta(hours=1))
    DeviceTelemetry.objects.update(sampled_at=timezone.now() - datetime.timedelta(hours=1))
    page = client_as(bob).get("/").content.decode()
    assert "No current reading" in page and "telemetry source <span" in page
    assert "Telemetry: 1 of 1 source stale" in page


def test_the_dashboard_shows_each_tenants_last_day(client_as, alice, mirrored_cluster):
    import datetime

    from django.utils import timezone

    from claims.models import UsageRollup

    page = client_as(alice).get("/").content.decode()
    assert "2 devices held; no utilisation reading in the last 24 h." in page
    now = timezone.now()
    for minutes, util in ((20, 30.0), (10, 50.0)):
        UsageRollup.objects.create(
            scope="tenant",
            key="team-a",
            resolution="5m",
            bucket_start=now - datetime.timedelta(minutes=minutes),
            device_seconds=600,  # two devices for the whole bucket
            gpu_util_avg=util,
        )

    page = client_as(alice).get("/").content.decode()

    assert "GPU 40 %</span>" in page and 'class="sparkline"' in page


def test_the_dashboard_counts_devices_by_class(client_as, carol, mirrored_cluster):
    from devices.models import DeviceClassMatch, DeviceState

    page = client_as(carol).get("/").content.decode()

    matches = DeviceClassMatch.objects.filter(device_class_name="gpu.nvidia.com")
    free = matches.filter(device__state=DeviceState.FREE).count()
    assert 'data-testid="devices-by-class"' in page
    assert (
        f'{free} free of</span> <span class="badge rounded-pill text-bg-light border">'
        f"{matches.count()}</span>" in page
    )
    assert 'href="/device-classes/gpu.nvidia.com/"' in page


def test_the_cluster_counts_follow_the_mirror_without_being_recounted_each_view(
    root, mirrored_cluster, django_assert_max_num_queries
):
    """Device, node and claim counts are kept until the mirror changes what they count."""
    from claims.models import ResourceClaim
    from devices.models import ResourceSlice
    from kube.kinds import Kind
    from mirror.models import MirrorStatus
    from mirror.store import apply_events

    before = cluster_overview(root)
    slice_row = ResourceSlice.objects.filter(device_count__gt=0).order_by("name").first()
    claim = ResourceClaim.objects.order_by("name").first()
    apply_events(Kind.RESOURCE_SLICES, [{"type": "DELETED", "object": slice_row.raw}])
    apply_events(Kind.RESOURCE_CLAIMS, [{"type": "DELETED", "object": claim.raw}])
    # The slice's write moved the inventory change log; the claims' version is the one the
    # claim watcher records with every batch it commits.
    MirrorStatus.objects.update_or_create(
        kind=Kind.RESOURCE_CLAIMS.value, defaults={"resource_version": "987654"}
    )
    after = cluster_overview(root)
    assert after["device_count"] == before["device_count"] - slice_row.device_count
    assert after["claims"]["total"] == before["claims"]["total"] - 1
