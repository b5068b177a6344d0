"""``/api/v1/quotas/`` speaks Kubernetes: device memory as quantities ("640Gi"), leases as ISO
8601 durations ("P7D"), with the approval policy; bytes as integers are still accepted."""

from __future__ import annotations

import datetime as dt

import pytest

from portal.models import Quota
from toolkit.durations import DurationError, format_duration, iso_duration, parse_duration
from toolkit.quantities import QuantityError, format_bytes, parse_bytes

GIB = 2**30


def _body(**fields):
    return {"tenant": "team-a", "device_class_name": "mig.nvidia.com", **fields}


@pytest.mark.django_db
def test_quantities_and_durations_round_trip_through_the_api(api_as, root, team_a):
    response = api_as(root).post(
        "/api/v1/quotas/",
        _body(
            max_device_memory="640Gi",
            max_lease="P7D",
            approve_above_devices=4,
            approve_above_memory="80Gi",
            approve_above_lease="PT12H",
            approve_over_quota=True,
        ),
        format="json",
    )
    assert response.status_code == 201, response.json()
    body = response.json()
    assert (body["max_device_memory"], body["max_lease"]) == ("640Gi", "P7D")
    assert (body["approve_above_memory"], body["approve_above_lease"]) == ("80Gi", "PT12H")
    assert (body["approve_above_devices"], body["approve_over_quota"]) == (4, True)
    quota = Quota.objects.get(pk=body["id"])
    assert (quota.max_device_memory, quota.max_lease) == (640 * GIB, dt.timedelta(days=7))
    listed = api_as(root).get("/api/v1/quotas/?device_class=mig.nvidia.com").json()["results"]
    assert listed[0]["max_device_memory"] == "640Gi"


@pytest.mark.django_db
def test_bytes_as_an_integer_and_short_durations_are_still_accepted(api_as, root, team_a):
    response = api_as(root).post(
        "/api/v1/quotas/", _body(max_device_memory=80 * GIB, max_lease="12h"), format="json"
    )
    assert response.status_code == 201, response.json()
    assert (response.json()["max_device_memory"], response.json()["max_lease"]) == ("80Gi", "PT12H")


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("max_device_memory", "640GB", "is not a quantity"),
        ("max_device_memory", -1, "between 0 and"),
        ("approve_above_memory", "-1Gi", "cannot be negative"),
        ("max_lease", "a week", "is not a duration"),
        ("approve_above_lease", 7, "Write a duration"),
    ],
)
def test_a_bad_quantity_or_duration_is_an_error_on_its_field(
    api_as, root, team_a, field, value, message
):
    response = api_as(root).post("/api/v1/quotas/", _body(**{field: value}), format="json")
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert list(fields) == [field]
    assert message in fields[field][0]


@pytest.mark.django_db
def test_a_patch_keeps_the_approval_policy_it_does_not_name(api_as, root, team_a):
    quota = Quota.objects.get(tenant=team_a)
    Quota.objects.filter(pk=quota.pk).update(
        approve_above_memory=160 * GIB, approve_over_quota=True
    )
    response = api_as(root).patch(
        f"/api/v1/quotas/{quota.pk}/", {"max_device_memory": "320Gi"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["approve_above_memory"] == "160Gi"
    quota.refresh_from_db()
    assert (quota.max_device_memory, quota.approve_over_quota) == (320 * GIB, True)


@pytest.mark.django_db
def test_tenant_admins_read_quotas_but_cannot_write_them(api_as, alice, team_a):
    quota = Quota.objects.get(tenant=team_a)
    client = api_as(alice)
    assert client.get(f"/api/v1/quotas/{quota.pk}/").status_code == 200
    patch = client.patch(f"/api/v1/quotas/{quota.pk}/", {"max_devices": 99}, format="json")
    assert patch.status_code == 403


@pytest.mark.django_db
def test_the_schema_documents_quantities_and_iso_durations(client_as, alice):
    schema = client_as(alice).get("/api/schema/?format=json").json()
    quota = schema["components"]["schemas"]["Quota"]["properties"]
    assert quota["max_device_memory"]["type"] == "string"
    assert quota["max_device_memory"]["example"] == "640Gi"
    assert quota["max_lease"]["example"] == "P7D"
    assert "approve_above_lease" in quota


@pytest.mark.parametrize(
    ("text", "value", "shown"),
    [
        ("640Gi", 640 * GIB, "640Gi"),
        ("80G", 80 * 10**9, "80G"),
        ("1073741824", GIB, "1Gi"),
        ("1.5Gi", 1536 * 2**20, "1536Mi"),
        ("0", 0, "0"),
    ],
)
def test_quantities_parse_to_bytes_and_format_back(text, value, shown):
    assert parse_bytes(text) == value
    assert format_bytes(value) == shown


@pytest.mark.parametrize("text", ["", "640GB", "abc", "-1Gi", "1e"])
def test_a_bad_quantity_says_what_to_write(text):
    with pytest.raises(QuantityError):
        parse_bytes(text)


@pytest.mark.parametrize(
    ("text", "value", "short", "iso"),
    [
        ("7d", dt.timedelta(days=7), "7d", "P7D"),
        ("12h", dt.timedelta(hours=12), "12h", "PT12H"),
        ("P1DT12H", dt.timedelta(days=1, hours=12), "1d12h", "P1DT12H"),
        ("90m", dt.timedelta(minutes=90), "1h30m", "PT1H30M"),
    ],
)
def test_durations_parse_and_format_both_ways(text, value, short, iso):
    assert parse_duration(text) == value
    assert (format_duration(value), iso_duration(value)) == (short, iso)


@pytest.mark.parametrize("text", ["a week", "0d", "-1d", "3651d"])
def test_a_bad_duration_is_refused(text):
    with pytest.raises(DurationError):
        parse_duration(text)
