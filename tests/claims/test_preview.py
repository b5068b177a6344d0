"""The New claim preview: counts, hints and "would it fit" from the real inventory."""

from __future__ import annotations

import pytest
import yaml

from claims.capacity.index import reset_index
from claims.lifecycle.manifest import PREVIEW_REQUEST_ID, manifest_document
from claims.models import REQUEST_ID_LABEL, RESERVATION_FINALIZER, ClaimRequest, ClassPolicy
from claims.requests.preview import preview
from claims.requests.specs import ClaimInput

BIG_MEMORY = 'device.capacity["gpu.nvidia.com"].memory.compareTo(quantity("80Gi")) >= 0'


@pytest.fixture
def inventory(mirrored_cluster):
    reset_index()
    yield
    reset_index()


def claim(**fields) -> ClaimInput:
    return ClaimInput(
        **{
            "namespace": "gpu-test1",
            "name": "preview",
            "device_class_name": "gpu.nvidia.com",
            **fields,
        }
    )


def test_it_counts_the_matching_and_free_devices_per_node(inventory, bob):
    result = preview(bob, claim(count=2, constraint="pcie"))
    assert result.is_valid, result.errors
    assert result.matched and result.free is not None and result.free <= result.matched
    assert sum(row.matching for row in result.nodes) <= result.matched
    assert result.fits is True
    assert len(result.devices) == 2
    assert "kind: ResourceClaim" in result.manifest
    assert "resourceClaimName: preview" in result.pod


def test_a_template_previews_a_resource_claim_template(inventory, bob):
    result = preview(bob, claim(sharing="template"))
    assert "kind: ResourceClaimTemplate" in result.manifest
    assert "resourceClaimTemplateName: preview" in result.pod


def test_a_selector_that_does_not_compile_is_reported_with_its_position(inventory, bob):
    result = preview(bob, claim(selectors=('device.attributes["gpu.nvidia.com"].x == 1 &&',)))
    assert "selectors" in result.errors
    assert "<input>:1:" in result.errors["selectors"][0]
    assert result.fits is None


def test_asking_80gi_on_h100s_explains_that_they_publish_81559mi(inventory, bob):
    result = preview(bob, claim(selectors=(BIG_MEMORY,)))
    assert result.matched == 0
    assert any("81559Mi (79.6 GiB)" in hint for hint in result.hints), result.hints
    assert result.fits is False
    assert result.explanations
    assert result.explanations[0].blocking_stage == "selectors"


def test_an_attribute_no_device_publishes_is_named(inventory, bob):
    result = preview(bob, claim(selectors=('device.attributes["gpu.nvidia.com"].cliqueID == "1"',)))
    assert any(
        "publishes the attribute gpu.nvidia.com/cliqueID" in hint for hint in result.hints
    ), result.hints


def test_an_unknown_class_and_a_foreign_namespace_are_field_errors(inventory, bob, carol):
    result = preview(bob, claim(device_class_name="nope.example.com", namespace="team-b-prod"))
    assert set(result.errors) >= {"device_class", "namespace"}
    assert result.matched is None


def test_the_preview_records_nothing(inventory, bob):
    preview(bob, claim(count=2))
    assert not ClaimRequest.objects.exists()


def test_the_preview_fragment_shows_counts_hints_and_errors(inventory, client_as, bob):
    client = client_as(bob)
    response = client.post(
        "/claims/requests/preview/",
        {
            "namespace": "gpu-test1",
            "name": "x",
            "device_class": "gpu.nvidia.com",
            "count": "1",
            "selectors": BIG_MEMORY,
            "sharing": "claim",
        },
        HTTP_HX_REQUEST="true",
    )
    assert response.status_code == 200
    body = response.content.decode()
    assert "<html" not in body
    assert 'data-testid="preview-matching"' in body
    assert "81559Mi (79.6 GiB)" in body
    assert "would not fit now" in body
    assert 'id="claim-presets" class="mb-3" hx-swap-oob="true"' in body

    broken = client.post(
        "/claims/requests/preview/",
        {
            "namespace": "gpu-test1",
            "name": "x",
            "device_class": "gpu.nvidia.com",
            "count": "1",
            "selectors": "device.attributes[",
            "sharing": "claim",
        },
        HTTP_HX_REQUEST="true",
    )
    assert "&lt;input&gt;:1:" in broken.content.decode()


def test_presets_a_class_does_not_publish_are_disabled_with_the_reason(inventory, client_as, bob):
    response = client_as(bob).get("/claims/requests/preview/?device_class=gpu.nvidia.com")
    body = response.content.decode()
    assert 'value="pcie">' in body or 'value="pcie" checked>' in body
    assert 'value="nvlink" disabled' in body
    assert "No device of class gpu.nvidia.com publishes cliqueID" in body


def test_the_preview_shows_the_claim_the_apply_writes(inventory, bob):
    """One manifest builder: the preview's YAML is ``claims.lifecycle.manifest``'s object,
    with the labels, annotations and (in reservation mode) the finalizer the real claim gets;
    only the request id is a placeholder until the request is recorded."""
    ClassPolicy.objects.create(device_class_name="gpu.nvidia.com", mode="reservation")
    result = preview(bob, claim(count=2))
    document = yaml.safe_load(result.manifest)
    unrecorded = ClaimRequest(
        name="preview",
        namespace="gpu-test1",
        spec=document["spec"],
        mode="reservation",
        requested_by=bob,
    )
    assert document == manifest_document(unrecorded, preview=True)
    metadata = document["metadata"]
    assert metadata["labels"] == {
        REQUEST_ID_LABEL: PREVIEW_REQUEST_ID,
        "app.kubernetes.io/managed-by": "dra-portal",
    }
    assert metadata["finalizers"] == [RESERVATION_FINALIZER]
    assert metadata["annotations"]["dra-portal.io/requested-by"] == "bob"
