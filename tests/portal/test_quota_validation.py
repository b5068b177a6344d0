"""Quotas are checked against the mirrored cluster's DeviceClasses, for every entry point."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError

from devices.models import DeviceClass
from portal.models import Quota
from portal.services.tenants import save_quota


@pytest.fixture
def device_classes(db):
    for name in ("gpu.example.com", "gpu.nvidia.com"):
        DeviceClass.objects.create(uid=f"uid-{name}", name=name, resource_version="1", raw={})


@pytest.mark.django_db
def test_a_quota_for_a_class_the_cluster_lacks_is_refused_naming_the_classes_it_has(
    team_a, root, device_classes
):
    with pytest.raises(ValidationError) as caught:
        save_quota(actor=root, tenant=team_a, device_class_name="tpu.google.com", max_devices=1)
    assert caught.value.message_dict == {
        "device_class_name": [
            "The cluster has no DeviceClass “tpu.google.com”. "
            "Its classes are: gpu.example.com, gpu.nvidia.com."
        ]
    }
    assert not Quota.objects.filter(device_class_name="tpu.google.com").exists()


@pytest.mark.django_db
def test_while_the_mirror_has_no_classes_a_quota_is_kept_and_marked(
    client_as, api_as, alice, team_a, root
):
    save_quota(actor=root, tenant=team_a, device_class_name="tpu.google.com", max_devices=1)
    page = client_as(alice).get("/tenants/team-a/").content.decode()
    assert page.count("class not in cluster") == 2  # gpu.nvidia.com is not mirrored either
    quotas = api_as(alice).get("/api/v1/quotas/").json()["results"]
    assert {q["device_class_name"]: q["device_class_in_cluster"] for q in quotas} == {
        "gpu.nvidia.com": False,
        "tpu.google.com": False,
    }


@pytest.mark.django_db
def test_a_quota_of_a_mirrored_class_is_not_marked(client_as, alice, team_a, device_classes):
    page = client_as(alice).get("/tenants/team-a/").content.decode()
    assert "class not in cluster" not in page


@pytest.mark.parametrize("lease", [dt.timedelta(hours=-1), dt.timedelta(0)])
@pytest.mark.django_db
def test_a_lease_limit_must_be_positive(team_a, root, lease):
    with pytest.raises(ValidationError) as caught:
        save_quota(actor=root, tenant=team_a, device_class_name="gpu.nvidia.com", max_lease=lease)
    assert list(caught.value.message_dict) == ["max_lease"]


@pytest.mark.django_db
def test_the_api_answers_the_same_refusal_as_a_field_error(api_as, root, team_a, device_classes):
    response = api_as(root).post(
        "/api/v1/quotas/",
        {"tenant": "team-a", "device_class_name": "tpu.google.com", "max_lease": "-01:00:00"},
        format="json",
    )
    assert response.status_code == 400
    fields = response.json()["error"]["fields"]
    assert fields["device_class_name"][0].startswith("The cluster has no DeviceClass")
    assert fields["max_lease"] == ["A lease limit must be longer than zero (blank: unlimited)."]


@pytest.mark.django_db
def test_renaming_a_quota_through_the_api_replaces_it(api_as, root, team_a, device_classes):
    quota = Quota.objects.get(tenant=team_a)
    response = api_as(root).patch(
        f"/api/v1/quotas/{quota.pk}/", {"device_class_name": "gpu.example.com"}, format="json"
    )
    assert response.status_code == 200, response.json()
    assert response.json()["device_class_in_cluster"] is True
    assert list(team_a.quotas.values_list("device_class_name", "max_devices")) == [
        ("gpu.example.com", 8)
    ]
