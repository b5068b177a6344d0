"""A tenant's API-token policy: members' tokens expire within ``Tenant.max_token_lifetime``
(a token asked without expiry gets the limit; a longer one is refused)."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone

from portal.models import ApiToken, Tenant
from portal.services.api_tokens import issue_api_token
from portal.services.tenants import save_tenant
from tests.factories import MembershipFactory, TenantFactory

pytestmark = pytest.mark.django_db


@pytest.fixture
def thirty_days(team_a, alice):
    save_tenant(actor=alice, tenant=team_a, max_token_lifetime=dt.timedelta(days=30))


def _days_left(token: ApiToken) -> float:
    assert token.expires_at is not None
    return (token.expires_at - timezone.now()) / dt.timedelta(days=1)


def test_a_token_without_expiry_gets_the_tenants_limit(bob, thirty_days):
    token = issue_api_token(user=bob, name="ci", lifetime=None).token
    assert 29.9 < _days_left(token) <= 30


def test_a_token_longer_than_the_limit_is_refused_clearly(bob, thirty_days):
    with pytest.raises(ValidationError) as caught:
        issue_api_token(user=bob, name="ci", lifetime=dt.timedelta(days=90))
    assert caught.value.message_dict == {
        "lifetime": ["Team A's policy: API tokens expire within 30d. Choose a shorter lifetime."]
    }
    assert not ApiToken.objects.exists()


def test_a_shorter_token_is_issued_as_asked(bob, thirty_days):
    token = issue_api_token(user=bob, name="ci", lifetime=dt.timedelta(days=7)).token
    assert 6.9 < _days_left(token) <= 7


def test_without_a_policy_tokens_may_never_expire(bob):
    assert issue_api_token(user=bob, name="ci", lifetime=None).token.expires_at is None


def test_the_shortest_limit_of_the_users_tenants_wins(bob, thirty_days):
    other = TenantFactory(name="Night shift", max_token_lifetime=dt.timedelta(days=7))
    MembershipFactory(user=bob, tenant=other)
    with pytest.raises(ValidationError) as caught:
        issue_api_token(user=bob, name="ci", lifetime=dt.timedelta(days=30))
    assert "Night shift's policy: API tokens expire within 7d." in caught.value.messages[0]


def test_the_token_page_states_the_policy_and_refuses_longer_tokens(client_as, bob, thirty_days):
    client = client_as(bob)
    assert (
        "Team A&#x27;s policy: API tokens expire within 30d."
        in client.get("/account/tokens/").content.decode()
    )
    refused = client.post("/account/tokens/", {"name": "ci", "lifetime": "90"})
    assert refused.status_code == 422
    assert "Choose a shorter lifetime." in refused.content.decode()
    at_limit = client.post("/account/tokens/", {"name": "ci", "lifetime": "never"})
    assert at_limit.status_code == 200
    assert 29.9 < _days_left(ApiToken.objects.get(user=bob)) <= 30


def test_a_lifetime_limit_must_be_positive(alice, team_a):
    with pytest.raises(ValidationError) as caught:
        save_tenant(actor=alice, tenant=team_a, max_token_lifetime=dt.timedelta(0))
    assert list(caught.value.message_dict) == ["max_token_lifetime"]
    assert Tenant.objects.get(pk=team_a.pk).max_token_lifetime is None


def test_the_tenant_api_shows_the_limit_as_iso_8601(api_as, bob, thirty_days):
    assert api_as(bob).get("/api/v1/tenants/team-a/").json()["max_token_lifetime"] == "P30D"
