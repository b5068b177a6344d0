"""Create, read, replace, patch, apply and delete through the real client, raw JSON."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.errors import AlreadyExists, Conflict, Invalid, NotFound
from kube.kinds import Kind

NAMESPACED = {Kind.RESOURCE_CLAIMS, Kind.RESOURCE_CLAIM_TEMPLATES, Kind.PODS, Kind.RESOURCE_QUOTAS}


def claim(name: str = "gpu-claim", **extra: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default", **extra},
        "spec": {
            "devices": {
                "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]
            }
        },
    }


def body_for(kind: Kind) -> dict[str, Any]:
    specs: dict[Kind, dict[str, Any]] = {
        Kind.DEVICE_CLASSES: {"selectors": [{"cel": {"expression": "true"}}]},
        Kind.RESOURCE_SLICES: {"driver": "gpu.example.com", "pool": {"name": "n1"}},
        Kind.RESOURCE_CLAIMS: claim()["spec"],
        Kind.RESOURCE_CLAIM_TEMPLATES: {"spec": claim()["spec"]},
        Kind.NODES: {"podCIDR": "10.0.0.0/24"},
        Kind.NAMESPACES: {},
        Kind.PODS: {"containers": [{"name": "c", "image": "busybox"}]},
        Kind.RESOURCE_QUOTAS: {"hard": {"count/resourceclaims.resource.k8s.io": "10"}},
    }
    metadata: dict[str, Any] = {"name": f"made-{kind.value}", "labels": {"app": "test"}}
    if kind in NAMESPACED:
        metadata["namespace"] = "default"
    return {"metadata": metadata, "spec": specs[kind]}


@pytest.mark.parametrize("kind", list(Kind))
def test_it_round_trips_every_kind(cluster: Cluster, kind: Kind) -> None:
    body = body_for(kind)
    created = cluster.create(kind, body)
    namespace = body["metadata"].get("namespace")
    fetched = cluster.get(kind, body["metadata"]["name"], namespace)

    expected = body["spec"]
    if kind in (Kind.RESOURCE_CLAIMS, Kind.RESOURCE_CLAIM_TEMPLATES):  # with the defaults
        request = {"deviceClassName": "gpu.nvidia.com", "allocationMode": "ExactCount", "count": 1}
        devices = {"devices": {"requests": [{"name": "gpu", "exactly": request}]}}
        expected = devices if kind == Kind.RESOURCE_CLAIMS else {"spec": devices}
    assert all(fetched["spec"].get(key) == value for key, value in expected.items())
    assert fetched["kind"] and fetched["apiVersion"]
    assert fetched["metadata"]["uid"] == created["metadata"]["uid"]
    assert int(fetched["metadata"]["resourceVersion"]) > 0
    assert fetched["metadata"]["creationTimestamp"].endswith("Z")
    listed = cluster.list_page(kind, namespace=namespace, label_selector="app=test")
    assert [i["metadata"]["name"] for i in listed["items"]] == [body["metadata"]["name"]]
    assert listed["kind"].endswith("List")
    assert "kind" not in listed["items"][0] and "apiVersion" not in listed["items"][0]


def test_it_rejects_a_duplicate_create_with_already_exists(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim())
    with pytest.raises(AlreadyExists) as caught:
        cluster.create(Kind.RESOURCE_CLAIMS, claim())
    assert caught.value.code == 409
    assert caught.value.reason == "AlreadyExists"


def test_it_rejects_a_replace_with_a_stale_resource_version(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim())
    fresh = cluster.replace(
        Kind.RESOURCE_CLAIMS, {**created, "metadata": {**created["metadata"], "labels": {"a": "1"}}}
    )
    assert fresh["metadata"]["labels"] == {"a": "1"}

    with pytest.raises(Conflict) as caught:
        cluster.replace(
            Kind.RESOURCE_CLAIMS,
            {**created, "metadata": {**created["metadata"], "labels": {"a": "2"}}},
        )
    assert caught.value.reason == "Conflict"


def test_it_bumps_generation_only_when_the_spec_changes(cluster: Cluster) -> None:
    created = cluster.create(Kind.DEVICE_CLASSES, body_for(Kind.DEVICE_CLASSES))
    name = created["metadata"]["name"]
    labelled = cluster.patch(Kind.DEVICE_CLASSES, name, {"metadata": {"labels": {"x": "y"}}})
    respecced = cluster.patch(
        Kind.DEVICE_CLASSES, name, {"spec": {"extendedResourceName": "example.com/gpu"}}
    )

    assert created["metadata"]["generation"] == 1
    assert labelled["metadata"]["generation"] == 1
    assert respecced["metadata"]["generation"] == 2


def test_it_does_not_bump_the_resource_version_on_a_no_op_patch(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim(labels={"a": "b"}))
    same = cluster.patch(
        Kind.RESOURCE_CLAIMS, "gpu-claim", {"metadata": {"labels": {"a": "b"}}}, namespace="default"
    )
    assert same["metadata"]["resourceVersion"] == created["metadata"]["resourceVersion"]


def test_it_applies_a_merge_patch_with_null_deleting_a_key(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim(labels={"keep": "1", "drop": "2"}))
    patched = cluster.patch(
        Kind.RESOURCE_CLAIMS,
        "gpu-claim",
        {"metadata": {"labels": {"drop": None, "new": "3"}}},
        namespace="default",
    )
    assert patched["metadata"]["labels"] == {"keep": "1", "new": "3"}


def test_it_treats_a_strategic_merge_patch_like_a_merge_patch(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim(annotations={"a": "1"}))
    patched = cluster.patch(
        Kind.RESOURCE_CLAIMS,
        "gpu-claim",
        {"metadata": {"annotations": {"b": "2"}, "$setElementOrder/finalizers": []}},
        namespace="default",
        patch_type="strategic",
    )
    assert patched["metadata"]["annotations"] == {"a": "1", "b": "2"}


def test_it_applies_every_json_patch_operation(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim(labels={"a": "1", "b": "2"}))
    operations = [
        {"op": "test", "path": "/metadata/labels/a", "value": "1"},
        {"op": "add", "path": "/metadata/annotations", "value": {"x/y": "z"}},
        {"op": "replace", "path": "/metadata/labels/a", "value": "10"},
        {"op": "remove", "path": "/metadata/labels/b"},
        {"op": "copy", "from": "/metadata/labels/a", "path": "/metadata/labels/c"},
        {"op": "move", "from": "/metadata/annotations/x~1y", "path": "/metadata/labels/moved"},
        {"op": "add", "path": "/metadata/finalizers", "value": ["f/one"]},
        {"op": "add", "path": "/metadata/finalizers/-", "value": "f/two"},
    ]
    patched = cluster.patch(
        Kind.RESOURCE_CLAIMS, "gpu-claim", operations, namespace="default", patch_type="json"
    )

    assert patched["metadata"]["labels"] == {"a": "10", "c": "10", "moved": "z"}
    assert "annotations" not in patched["metadata"]  # emptied: omitted, as the real server does
    assert patched["metadata"]["finalizers"] == ["f/one", "f/two"]


def test_it_rejects_a_json_patch_whose_test_fails(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim(labels={"a": "1"}))
    with pytest.raises(Invalid) as caught:
        cluster.patch(
            Kind.RESOURCE_CLAIMS,
            "gpu-claim",
            [{"op": "test", "path": "/metadata/labels/a", "value": "2"}],
            namespace="default",
            patch_type="json",
        )
    assert caught.value.code == 422


def test_it_rejects_a_patch_carrying_a_stale_resource_version(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim())
    cluster.patch(
        Kind.RESOURCE_CLAIMS, "gpu-claim", {"metadata": {"labels": {"a": "1"}}}, namespace="default"
    )
    with pytest.raises(Conflict):
        cluster.patch(
            Kind.RESOURCE_CLAIMS,
            "gpu-claim",
            {
                "metadata": {
                    "resourceVersion": created["metadata"]["resourceVersion"],
                    "labels": {"a": "2"},
                }
            },
            namespace="default",
        )


def test_it_creates_then_updates_with_server_side_apply(cluster: Cluster) -> None:
    first = cluster.apply(Kind.RESOURCE_CLAIMS, claim(labels={"portal/request": "42"}))
    second = cluster.apply(
        Kind.RESOURCE_CLAIMS, claim(annotations={"note": "applied again"}), force=True
    )

    assert first["metadata"]["managedFields"][0]["manager"] == "dra-portal"
    assert first["metadata"]["managedFields"][0]["operation"] == "Apply"
    assert second["metadata"]["uid"] == first["metadata"]["uid"]
    assert second["metadata"]["labels"] == {"portal/request": "42"}
    assert second["metadata"]["annotations"] == {"note": "applied again"}
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])


def test_the_status_subresource_changes_only_the_status(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim())
    allocation = {
        "devices": {"results": [{"request": "gpu", "driver": "d", "pool": "p", "device": "gpu-0"}]}
    }
    patched = cluster.patch_status(
        Kind.RESOURCE_CLAIMS,
        "gpu-claim",
        {"status": {"allocation": allocation}, "metadata": {"labels": {"ignored": "yes"}}},
        namespace="default",
    )

    assert patched["status"]["allocation"] == allocation
    assert "labels" not in patched["metadata"]
    assert patched["metadata"]["generation"] == 1


def test_main_resource_writes_ignore_the_status_of_a_claim(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_CLAIMS, {**claim(), "status": {"allocation": {}}})
    assert "status" not in created  # dropped on create, as the real strategy does
    cluster.patch_status(
        Kind.RESOURCE_CLAIMS, "gpu-claim", {"status": {"reservedFor": []}}, namespace="default"
    )
    current = cluster.get(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")
    replaced = cluster.replace(Kind.RESOURCE_CLAIMS, {**current, "status": {"devices": ["x"]}})
    patched = cluster.patch(
        Kind.RESOURCE_CLAIMS, "gpu-claim", {"status": {"devices": ["y"]}}, namespace="default"
    )

    assert replaced["status"] == {"reservedFor": []}
    assert patched["status"] == {"reservedFor": []}


def test_replace_status_with_a_stale_resource_version_conflicts(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim())
    cluster.patch(
        Kind.RESOURCE_CLAIMS, "gpu-claim", {"metadata": {"labels": {"a": "1"}}}, namespace="default"
    )
    with pytest.raises(Conflict):
        cluster.replace_status(Kind.RESOURCE_CLAIMS, {**created, "status": {"reservedFor": []}})


def test_it_rejects_a_change_to_the_immutable_claim_spec(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim())
    with pytest.raises(Invalid):
        cluster.patch(
            Kind.RESOURCE_CLAIMS,
            "gpu-claim",
            {"spec": {"devices": {"requests": []}}},
            namespace="default",
        )


def test_it_deletes_and_then_reports_not_found(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim())
    deleted = cluster.delete(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")

    # kube-apiserver answers a resource.k8s.io delete with the deleted object
    assert deleted["kind"] == "ResourceClaim"
    assert deleted["metadata"]["uid"] == created["metadata"]["uid"]
    with pytest.raises(NotFound):
        cluster.get(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")
    with pytest.raises(NotFound):
        cluster.delete(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")


def test_a_delete_of_a_kind_outside_resource_k8s_io_answers_a_status(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_QUOTAS, body_for(Kind.RESOURCE_QUOTAS))
    status = cluster.delete(Kind.RESOURCE_QUOTAS, created["metadata"]["name"], "default")

    assert status["kind"] == "Status" and status["status"] == "Success"


def test_a_delete_with_a_stale_precondition_conflicts(cluster: Cluster) -> None:
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim())
    cluster.patch(
        Kind.RESOURCE_CLAIMS, "gpu-claim", {"metadata": {"labels": {"a": "1"}}}, namespace="default"
    )
    with pytest.raises(Conflict):
        cluster.delete(
            Kind.RESOURCE_CLAIMS,
            "gpu-claim",
            "default",
            resource_version=created["metadata"]["resourceVersion"],
        )


def test_it_keeps_an_object_with_finalizers_until_they_are_removed(cluster: Cluster) -> None:
    cluster.create(
        Kind.RESOURCE_CLAIMS, claim(finalizers=["resource.kubernetes.io/delete-protection"])
    )
    pending = cluster.delete(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")
    assert pending["metadata"]["deletionTimestamp"]
    assert cluster.get(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")["metadata"][
        "deletionTimestamp"
    ]

    cluster.patch(
        Kind.RESOURCE_CLAIMS, "gpu-claim", {"metadata": {"finalizers": None}}, namespace="default"
    )
    with pytest.raises(NotFound):
        cluster.get(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")


def test_it_refuses_a_namespaced_object_in_a_missing_namespace(cluster: Cluster) -> None:
    with pytest.raises(NotFound, match='namespaces "nowhere" not found'):
        cluster.create(Kind.RESOURCE_CLAIMS, claim(), namespace="nowhere")


def test_it_generates_a_name_from_generate_name(cluster: Cluster) -> None:
    body = claim()
    del body["metadata"]["name"]
    body["metadata"]["generateName"] = "pod0-gpu-"
    created = cluster.create(Kind.RESOURCE_CLAIMS, body)
    assert created["metadata"]["name"].startswith("pod0-gpu-")
    assert len(created["metadata"]["name"]) == len("pod0-gpu-") + 5


def test_deleting_a_namespace_deletes_what_it_contains(cluster: Cluster) -> None:
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "team-a"}})
    cluster.create(Kind.RESOURCE_CLAIMS, claim(), namespace="team-a")
    cluster.delete(Kind.NAMESPACES, "team-a")
    with pytest.raises(NotFound):
        cluster.get(Kind.RESOURCE_CLAIMS, "gpu-claim", "team-a")


def test_a_malformed_body_is_rejected_with_a_status(emulator: Emulator) -> None:
    request = urllib.request.Request(
        f"{emulator.url}/apis/resource.k8s.io/v1/namespaces/default/resourceclaims",
        data=b'{"metadata": {}}',
        headers={"Content-Type": "application/json"},
        method="POST",
    )
    with pytest.raises(urllib.error.HTTPError) as caught:
        urllib.request.urlopen(request)
    assert caught.value.code == 422
    assert b'"reason":"Invalid"' in caught.value.read()


def test_deletecollection_deletes_the_selected_objects(
    emulator: Emulator, cluster: Cluster
) -> None:
    for name, team in [("a", "x"), ("b", "x"), ("c", "y")]:
        cluster.create(Kind.RESOURCE_CLAIMS, claim(name, labels={"team": team}))
    request = urllib.request.Request(
        f"{emulator.url}/apis/resource.k8s.io/v1/namespaces/default/resourceclaims"
        "?labelSelector=team%3Dx",
        method="DELETE",
    )
    with urllib.request.urlopen(request, timeout=5) as response:
        assert response.status == 200
    left = cluster.list_page(Kind.RESOURCE_CLAIMS, namespace="default")["items"]
    assert [i["metadata"]["name"] for i in left] == ["c"]


def _post(emulator: Emulator, query: str, body: dict[str, Any]) -> tuple[int, Any, list[str]]:
    request = urllib.request.Request(  # noqa: S310 - the emulator on loopback
        f"{emulator.url}/apis/resource.k8s.io/v1/deviceclasses{query}",
        data=json.dumps(body).encode(),
        method="POST",
        headers={"Content-Type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request, timeout=5) as response:  # noqa: S310
            return response.status, json.loads(response.read()), response.headers.get_all("Warning")
    except urllib.error.HTTPError as exc:
        return exc.code, json.loads(exc.read()), exc.headers.get_all("Warning") or []


def test_it_drops_unknown_fields_with_a_warning(emulator: Emulator) -> None:
    body = {"metadata": {"name": "c", "color": "red"}, "spec": {"selectors": [], "foo": 1}}
    code, created, warnings = _post(emulator, "", body)
    assert code == 201
    assert sorted(warnings) == [
        '299 - "unknown field \\"metadata.color\\""',
        '299 - "unknown field \\"spec.foo\\""',
    ]
    assert "foo" not in created["spec"] and "color" not in created["metadata"]


def test_strict_field_validation_refuses_unknown_fields(emulator: Emulator) -> None:
    body = {"metadata": {"name": "c"}, "spec": {"selectors": [], "foo": 1}}
    code, status, _ = _post(emulator, "?fieldValidation=Strict", body)
    assert (code, status["reason"]) == (400, "BadRequest")
    assert status["message"].endswith('strict decoding error: unknown field "spec.foo"')
    assert emulator.objects("DeviceClass") == []


def test_find_answers_the_object_or_none(cluster: Cluster) -> None:
    assert cluster.find(Kind.RESOURCE_CLAIMS, "gpu-claim", "default") is None
    created = cluster.create(Kind.RESOURCE_CLAIMS, claim())
    found = cluster.find(Kind.RESOURCE_CLAIMS, "gpu-claim", "default")
    assert found is not None
    assert found["metadata"]["uid"] == created["metadata"]["uid"]


def test_the_dra_defaults_are_filled_in_as_kube_apiserver_fills_them(cluster: Cluster) -> None:
    """Issue 26, item 12: ``allocationMode`` ExactCount and ``count`` 1, in requests and
    subrequests, on create and on update; ``All`` gets no count; a toleration's operator
    Equal. An update that leaves them out is not a change of the immutable spec."""
    spec = {
        "devices": {
            "requests": [
                {"name": "a", "exactly": {"deviceClassName": "gpu", "tolerations": [{"key": "k"}]}},
                {"name": "b", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
                {"name": "c", "exactly": {"deviceClassName": "gpu", "count": 3}},
                {"name": "d", "firstAvailable": [{"name": "x", "deviceClassName": "gpu"}]},
            ]
        }
    }
    body = {"metadata": {"name": "defaults", "namespace": "default"}, "spec": spec}
    created = cluster.create(Kind.RESOURCE_CLAIMS, body)
    requests = created["spec"]["devices"]["requests"]
    assert requests[0]["exactly"]["allocationMode"] == "ExactCount"
    assert requests[0]["exactly"]["count"] == 1
    assert requests[0]["exactly"]["tolerations"] == [{"key": "k", "operator": "Equal"}]
    assert requests[1]["exactly"] == {"deviceClassName": "gpu", "allocationMode": "All"}
    assert requests[2]["exactly"]["count"] == 3
    assert requests[3]["firstAvailable"][0] == {
        "name": "x",
        "deviceClassName": "gpu",
        "allocationMode": "ExactCount",
        "count": 1,
    }
    # The same spec without its defaults, sent again with a label: not a spec change.
    body["metadata"]["labels"] = {"seen": "yes"}
    body["metadata"]["resourceVersion"] = created["metadata"]["resourceVersion"]
    updated = cluster.replace(Kind.RESOURCE_CLAIMS, body)
    assert updated["metadata"]["labels"] == {"seen": "yes"}
    assert updated["spec"] == created["spec"]
