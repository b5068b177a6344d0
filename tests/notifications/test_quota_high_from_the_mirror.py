"""Usage that rises through the mirror (a claim made with kubectl, a scheduler allocating)
raises the quota-high alarm as soon as the mirror shows it, not on the next beat."""

from __future__ import annotations

import pytest
from django.core import mail

from kube.client import Cluster
from kube.config import ClusterConfig
from kube.kinds import Kind
from notifications.models import Event, Notification, QuotaAlarm
from tests.mirror.conftest import watch_claims

pytestmark = pytest.mark.django_db(transaction=True)


def kubectl_claim(name: str, count: int) -> dict:
    request = {"name": "gpus", "exactly": {"deviceClassName": "gpu.nvidia.com", "count": count}}
    return {
        "metadata": {"name": name, "namespace": "gpu-test1"},
        "spec": {"devices": {"requests": [request]}},
    }


def test_tenant_admins_are_told_when_the_mirror_brings_usage_over_the_line(alice, bob, live):
    emulator, cluster, _ = live

    def apply_manifests(*claims: dict) -> None:
        with Cluster(ClusterConfig(server=emulator.url, read_timeout=5)) as client:
            for claim in claims:
                client.create(Kind.RESOURCE_CLAIMS, claim)

    def alarm_raised() -> bool:
        return QuotaAlarm.objects.filter(
            device_class_name="gpu.nvidia.com", is_raised=True
        ).exists()

    # Team A's fixture claims hold 2 of its 8 GPUs; 4 more is 75 %: below the line.
    watch_claims(
        cluster,
        lambda: QuotaAlarm.objects.filter(device_class_name="gpu.nvidia.com").exists(),
        action=lambda: apply_manifests(kubectl_claim("four", 4)),
    )
    assert not alarm_raised()
    watch_claims(cluster, alarm_raised, action=lambda: apply_manifests(kubectl_claim("two", 2)))
    [notice] = Notification.objects.filter(event=Event.QUOTA_HIGH, user=alice)
    assert notice.subject == "Team A uses 100 % of its gpu.nvidia.com quota"
    [email] = [m for m in mail.outbox if "quota" in m.subject]
    assert email.to == ["alice@example.com"]
    assert "devices: 8 of 8 (100 %)" in email.body
