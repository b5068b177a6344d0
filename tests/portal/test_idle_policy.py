"""A tenant's idle policy: written through its service (admin included), audited, and
overriding the portal's IDLE_* settings field by field."""

from __future__ import annotations

import datetime

import pytest
from django.core.exceptions import ValidationError

from portal.models import AuditEvent, EffectiveIdlePolicy, IdlePolicy
from portal.services.idle_policies import save_idle_policy

HOUR = datetime.timedelta(hours=1)


def test_blank_fields_follow_the_settings(team_a, settings):
    settings.IDLE_NO_CONSUMER_AFTER = 3 * HOUR
    settings.IDLE_UTILISATION_THRESHOLD = 7
    policy = IdlePolicy.objects.create(tenant=team_a, reclaim=True, grace_period=HOUR)

    assert policy.effective() == EffectiveIdlePolicy(
        no_consumer_after=3 * HOUR,
        utilisation_threshold=7,
        low_utilisation_after=settings.IDLE_LOW_UTILISATION_AFTER,
        reclaim=True,
        grace_period=HOUR,
    )
    assert EffectiveIdlePolicy.defaults().reclaim is False
    assert IdlePolicy.objects.effective() == {team_a.pk: policy.effective()}


def test_saving_a_policy_is_audited(team_a, root):
    save_idle_policy(actor=root, tenant=team_a, reclaim=True, grace_period=2 * HOUR)
    save_idle_policy(actor=root, tenant=team_a, reclaim=False, grace_period=2 * HOUR)
    save_idle_policy(actor=root, tenant=team_a, reclaim=False, grace_period=2 * HOUR)

    events = AuditEvent.objects.filter(object_type="portal.IdlePolicy").order_by("id")
    assert [e.action for e in events] == [AuditEvent.Action.CREATED, AuditEvent.Action.UPDATED]
    assert events[1].before["reclaim"] is True
    assert events[1].after["reclaim"] is False
    assert events[1].tenant == team_a


def test_a_duration_of_zero_is_refused(team_a, root):
    with pytest.raises(ValidationError):
        save_idle_policy(actor=root, tenant=team_a, grace_period=datetime.timedelta(0))
    with pytest.raises(ValidationError):
        save_idle_policy(actor=root, tenant=team_a, utilisation_threshold=101)


def test_the_admin_saves_through_the_service(team_a, client_as, root):
    response = client_as(root).post(
        "/admin/portal/idlepolicy/add/",
        {
            "tenant": team_a.pk,
            "reclaim": "on",
            "grace_period": "12h",
            "no_consumer_after": "",
            "utilisation_threshold": "10",
            "low_utilisation_after": "",
        },
    )
    assert response.status_code == 302, response.content
    policy = IdlePolicy.objects.get(tenant=team_a)
    assert (policy.reclaim, policy.grace_period, policy.utilisation_threshold) == (
        True,
        12 * HOUR,
        10,
    )
    assert AuditEvent.objects.filter(object_type="portal.IdlePolicy", actor=root).exists()
