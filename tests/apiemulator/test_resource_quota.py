"""ResourceQuota admission of ResourceClaims, as kube-apiserver enforces it
(``pkg/quota/v1/evaluator/core/resource_claims.go``), through the real client."""

from __future__ import annotations

from typing import Any

import pytest

from kube.client import Cluster
from kube.errors import Forbidden, Invalid
from kube.kinds import Kind

COUNT = "count/resourceclaims.resource.k8s.io"
GPUS = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
MIGS = "mig.nvidia.com.deviceclass.resource.k8s.io/devices"


def exactly(name: str = "gpu", count: int | None = None, **extra: Any) -> dict[str, Any]:
    request: dict[str, Any] = {"deviceClassName": "gpu.nvidia.com", **extra}
    if count is not None:
        request["count"] = count
    return {"name": name, "exactly": request}


def claim(name: str, *requests: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"devices": {"requests": list(requests) or [exactly()]}},
    }


def quota(cluster: Cluster, hard: dict[str, str], name: str = "limits") -> dict[str, Any]:
    cluster.create(
        Kind.RESOURCE_QUOTAS, {"metadata": {"name": name}, "spec": {"hard": hard}}, "default"
    )
    return cluster.get(Kind.RESOURCE_QUOTAS, name, "default")


def used(cluster: Cluster, name: str = "limits") -> dict[str, str]:
    return cluster.get(Kind.RESOURCE_QUOTAS, name, "default")["status"]["used"]


def test_a_new_quota_gets_its_status_from_the_quota_controller(cluster: Cluster) -> None:
    cluster.create(Kind.RESOURCE_CLAIMS, claim("before", exactly(count=2)))
    created = quota(cluster, {GPUS: "8", COUNT: "5", "pods": "10"})
    assert created["status"]["hard"] == {GPUS: "8", COUNT: "5", "pods": "10"}
    # Claims made before the quota count; resources it does not evaluate get no used entry.
    assert created["status"]["used"] == {GPUS: "2", COUNT: "1"}


def test_claims_within_the_quota_are_admitted_and_charged(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "4", COUNT: "3"})
    cluster.create(Kind.RESOURCE_CLAIMS, claim("one", exactly(count=3)))
    assert used(cluster) == {GPUS: "3", COUNT: "1"}


def test_a_claim_beyond_the_device_quota_is_forbidden_with_the_api_servers_message(
    cluster: Cluster,
) -> None:
    quota(cluster, {GPUS: "4"})
    cluster.create(Kind.RESOURCE_CLAIMS, claim("three", exactly(count=3)))
    with pytest.raises(Forbidden) as refused:
        cluster.create(Kind.RESOURCE_CLAIMS, claim("two-more", exactly(count=2)))
    assert refused.value.code == 403
    assert refused.value.reason == "Forbidden"
    assert refused.value.message == (
        'resourceclaims.resource.k8s.io "two-more" is forbidden: exceeded quota: limits, '
        f"requested: {GPUS}=2, used: {GPUS}=3, limited: {GPUS}=4"
    )
    assert used(cluster) == {GPUS: "3"}  # nothing charged for the refused claim


def test_the_claim_count_is_limited_per_namespace(cluster: Cluster) -> None:
    quota(cluster, {COUNT: "1"})
    cluster.create(Kind.RESOURCE_CLAIMS, claim("first"))
    with pytest.raises(
        Forbidden, match=f"requested: {COUNT}=1, used: {COUNT}=1, limited: {COUNT}=1"
    ):
        cluster.create(Kind.RESOURCE_CLAIMS, claim("second"))


def test_every_exceeded_resource_is_named_sorted(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "1", COUNT: "1"})
    cluster.create(Kind.RESOURCE_CLAIMS, claim("first"))
    with pytest.raises(Forbidden) as refused:
        cluster.create(Kind.RESOURCE_CLAIMS, claim("second"))
    assert f"requested: {COUNT}=1,{GPUS}=1, used: {COUNT}=1,{GPUS}=1" in refused.value.message


def test_all_mode_counts_as_the_largest_possible_allocation(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "31"})
    with pytest.raises(Forbidden, match=f"requested: {GPUS}=32"):
        cluster.create(Kind.RESOURCE_CLAIMS, claim("all", exactly(allocationMode="All")))


def test_first_available_counts_its_largest_alternative_per_class(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "10", MIGS: "10"})
    request = {
        "name": "gpu",
        "firstAvailable": [
            {"name": "big", "deviceClassName": "gpu.nvidia.com", "count": 4},
            {"name": "small", "deviceClassName": "gpu.nvidia.com", "count": 2},
            {"name": "mig", "deviceClassName": "mig.nvidia.com", "count": 3},
        ],
    }
    cluster.create(Kind.RESOURCE_CLAIMS, claim("alternatives", request, exactly("more", count=1)))
    assert used(cluster) == {GPUS: "5", MIGS: "3"}


def test_admin_access_requests_count_like_any_other(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "1"})
    with pytest.raises(Forbidden):
        cluster.create(Kind.RESOURCE_CLAIMS, claim("admin", exactly(count=2, adminAccess=True)))


def test_deleting_a_claim_gives_its_usage_back(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "2", COUNT: "1"})
    cluster.create(Kind.RESOURCE_CLAIMS, claim("first", exactly(count=2)))
    cluster.delete(Kind.RESOURCE_CLAIMS, "first", "default")
    assert used(cluster) == {GPUS: "0", COUNT: "0"}
    cluster.create(Kind.RESOURCE_CLAIMS, claim("second", exactly(count=2)))


def test_changing_hard_updates_the_status_and_what_is_admitted(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "1"})
    cluster.create(Kind.RESOURCE_CLAIMS, claim("first"))
    live = cluster.get(Kind.RESOURCE_QUOTAS, "limits", "default")  # charging changed it
    live["spec"]["hard"] = {GPUS: "3"}
    cluster.replace(Kind.RESOURCE_QUOTAS, live)
    assert cluster.get(Kind.RESOURCE_QUOTAS, "limits", "default")["status"]["hard"] == {GPUS: "3"}
    cluster.create(Kind.RESOURCE_CLAIMS, claim("second", exactly(count=2)))
    assert used(cluster) == {GPUS: "3"}


def test_every_quota_of_the_namespace_must_admit_the_claim(cluster: Cluster) -> None:
    quota(cluster, {GPUS: "10"}, name="roomy")
    quota(cluster, {GPUS: "1"}, name="tight")
    with pytest.raises(Forbidden, match="exceeded quota: tight"):
        cluster.create(Kind.RESOURCE_CLAIMS, claim("two", exactly(count=2)))


def test_quotas_in_other_namespaces_do_not_apply(cluster: Cluster) -> None:
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "elsewhere"}})
    cluster.create(
        Kind.RESOURCE_QUOTAS,
        {"metadata": {"name": "zero"}, "spec": {"hard": {GPUS: "0"}}},
        "elsewhere",
    )
    cluster.create(Kind.RESOURCE_CLAIMS, claim("fine"))


def test_a_hard_value_that_is_not_a_quantity_is_invalid(cluster: Cluster) -> None:
    with pytest.raises(Invalid, match="quantities must match"):
        quota(cluster, {GPUS: "lots"})
