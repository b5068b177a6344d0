"""``manage.py load_fixtures`` puts the fixtures into a cluster as a real server keeps them:
fresh uids with every reference rewritten, statuses written, nothing garbage-collected, and a
second run changes nothing."""

from __future__ import annotations

import io
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind

FIXTURES = Path(__file__).resolve().parents[2] / "devices" / "fixtures"


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    # An empty cluster: no system namespaces to collide with, no identities kept from files.
    with Emulator(port=0, bookmark_interval=0.2) as emu:
        yield emu


@pytest.fixture
def cluster(emulator: Emulator) -> Iterator[Cluster]:
    with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
        yield client


def load(settings, emulator: Emulator, *paths: str) -> str:
    settings.KUBE_API_SERVER = emulator.url
    out = io.StringIO()
    call_command("load_fixtures", *paths, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_it_loads_every_fixture_with_references_to_the_uids_the_server_gave(
    settings, emulator: Emulator, cluster: Cluster
) -> None:
    output = load(settings, emulator)

    assert "statuses written" in output  # and no problems: the command did not fail
    nodes = {n["metadata"]["name"]: n for n in cluster.list_page(Kind.NODES)["items"]}
    pods = {
        (p["metadata"]["namespace"], p["metadata"]["name"]): p
        for p in cluster.list_page(Kind.PODS)["items"]
    }
    slices, _ = cluster.list_all(Kind.RESOURCE_SLICES)
    claims, _ = cluster.list_all(Kind.RESOURCE_CLAIMS)
    assert len(slices) == 15
    for slice_ in slices:
        for owner in slice_["metadata"].get("ownerReferences") or []:
            assert nodes[owner["name"]]["metadata"]["uid"] == owner["uid"]
    generated = [c for c in claims if c["metadata"].get("ownerReferences")]
    assert generated
    for claim in generated:
        namespace = claim["metadata"]["namespace"]
        for owner in claim["metadata"]["ownerReferences"]:
            assert pods[(namespace, owner["name"])]["metadata"]["uid"] == owner["uid"]
        for consumer in (claim.get("status") or {}).get("reservedFor") or []:
            assert pods[(namespace, consumer["name"])]["metadata"]["uid"] == consumer["uid"]
    assert any((c.get("status") or {}).get("allocation") for c in claims)
    assert nodes["dgx-h100-01"]["status"]["nodeInfo"]["architecture"] == "amd64"
    assert pods[("gpu-test1", "pod1")]["status"]["phase"] == "Running"

    assert emulator.collect_garbage() == []


def test_a_second_run_changes_nothing(settings, emulator: Emulator) -> None:
    load(settings, emulator)
    version = emulator.resource_version

    output = load(settings, emulator)

    assert output.startswith("0 created, 0 statuses written")
    assert emulator.resource_version == version


def test_a_claim_whose_pod_is_missing_is_reported_not_left_to_the_collector(
    settings, emulator: Emulator, tmp_path: Path
) -> None:
    claims = (FIXTURES / "claims.json").read_text()
    (tmp_path / "claims.json").write_text(claims)
    settings.KUBE_API_SERVER = emulator.url
    errors = io.StringIO()

    with pytest.raises(CommandError, match=r"object\(s\) not loaded"):
        call_command(
            "load_fixtures",
            str(FIXTURES / "namespaces.json"),
            str(FIXTURES / "deviceclasses.json"),
            str(tmp_path / "claims.json"),
            stdout=io.StringIO(),
            stderr=errors,
        )
    assert "its owner Pod pod1 is in neither the fixtures nor the cluster" in errors.getvalue()


def test_a_missing_path_is_a_clear_error(settings, emulator: Emulator) -> None:
    with pytest.raises(CommandError, match="no such file or directory: nowhere.json"):
        load(settings, emulator, "nowhere.json")
