"""``field__any=[…]`` (toolkit.lookups) selects what ``field__in=[…]`` does, with one array
parameter on PostgreSQL."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from claims.models import AllocatedDevice, ResourceClaim


def _claims(count: int) -> list[ResourceClaim]:
    claims = [
        ResourceClaim.objects.create(
            uid=f"uid-{i}", namespace="team-a", name=f"claim-{i}", resource_version=str(i), raw={}
        )
        for i in range(count)
    ]
    for claim in claims:
        AllocatedDevice.objects.create(
            claim=claim, request="gpu", driver="gpu.nvidia.com", pool="node-a", device_name="gpu-0"
        )
    return claims


@pytest.mark.django_db
def test_any_selects_what_in_selects():
    claims = _claims(6)
    wanted = ["uid-1", "uid-4", "absent"]
    assert sorted(ResourceClaim.objects.filter(uid__any=wanted).values_list("uid", flat=True)) == (
        sorted(ResourceClaim.objects.filter(uid__in=wanted).values_list("uid", flat=True))
    )
    assert not ResourceClaim.objects.filter(uid__any=[]).exists()
    # Related fields too: by the key column, in a delete.
    pks = [claims[0].pk, claims[2].pk]
    assert AllocatedDevice.objects.filter(claim_id__any=pks).count() == 2
    AllocatedDevice.objects.filter(claim_id__any=pks).delete()
    assert AllocatedDevice.objects.count() == 4
    assert ResourceClaim.objects.filter(uid__any={"uid-3"}).get().name == "claim-3"


@pytest.mark.django_db
def test_on_postgresql_the_list_is_one_parameter(postgres):
    _claims(3)
    with CaptureQueriesContext(connection) as queries:
        found = list(ResourceClaim.objects.filter(uid__any=[f"uid-{i}" for i in range(500)]))
    assert len(found) == 3
    sql = queries.captured_queries[-1]["sql"]
    assert "= ANY(" in sql and sql.count("uid-") == 500 and " IN (" not in sql
