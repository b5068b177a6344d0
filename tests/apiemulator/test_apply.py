"""Server-side apply keeps field ownership: another manager changing an owned field is a
conflict (409) unless forced, as kube-apiserver answers."""

from __future__ import annotations

from typing import Any

import pytest

from kube.client import Cluster
from kube.errors import Conflict
from kube.kinds import Kind


def labelled(**labels: str) -> dict[str, Any]:
    return {"metadata": {"name": "gpus", "labels": labels}, "spec": {"selectors": []}}


def managers(obj: dict[str, Any]) -> dict[str, Any]:
    return {f["manager"]: f["fieldsV1"] for f in obj["metadata"]["managedFields"]}


def test_a_second_manager_changing_an_owned_field_gets_a_conflict(cluster: Cluster) -> None:
    cluster.apply(Kind.DEVICE_CLASSES, labelled(team="a"), field_manager="alpha")
    with pytest.raises(Conflict) as caught:
        cluster.apply(Kind.DEVICE_CLASSES, labelled(team="b"), field_manager="beta")
    assert str(caught.value.message).startswith(
        'Apply failed with 1 conflict: conflict with "alpha": .metadata.labels.team'
    )
    assert cluster.get(Kind.DEVICE_CLASSES, "gpus")["metadata"]["labels"] == {"team": "a"}


def test_the_same_value_is_shared_and_force_takes_a_field_over(cluster: Cluster) -> None:
    cluster.apply(Kind.DEVICE_CLASSES, labelled(team="a"), field_manager="alpha")
    shared = cluster.apply(Kind.DEVICE_CLASSES, labelled(team="a"), field_manager="beta")
    assert (
        managers(shared)["beta"]
        == managers(shared)["alpha"]
        == {
            "f:metadata": {"f:labels": {"f:team": {}}},
            "f:spec": {"f:selectors": {}},
        }
    )

    forced = cluster.apply(
        Kind.DEVICE_CLASSES, labelled(team="c"), field_manager="gamma", force=True
    )
    assert forced["metadata"]["labels"] == {"team": "c"}
    assert managers(forced)["alpha"] == {"f:spec": {"f:selectors": {}}}  # team went to gamma
    with pytest.raises(Conflict, match='conflict with "gamma"'):
        cluster.apply(Kind.DEVICE_CLASSES, labelled(team="a"), field_manager="alpha")


def test_an_update_takes_a_field_over_without_a_conflict(cluster: Cluster) -> None:
    cluster.apply(Kind.DEVICE_CLASSES, labelled(team="a"), field_manager="alpha")
    patched = cluster.patch(
        Kind.DEVICE_CLASSES, "gpus", {"metadata": {"labels": {"team": "b"}}}, field_manager="ops"
    )
    assert managers(patched) == {
        "alpha": {"f:spec": {"f:selectors": {}}},
        "ops": {"f:metadata": {"f:labels": {"f:team": {}}}},
    }
    with pytest.raises(Conflict, match='conflict with "ops" using resource.k8s.io/v1'):
        cluster.apply(Kind.DEVICE_CLASSES, labelled(team="a"), field_manager="alpha")
