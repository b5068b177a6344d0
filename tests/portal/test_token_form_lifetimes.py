"""The token form offers the lifetimes the user's tenants allow: under a limit nothing longer,
the limit itself as the longest choice and the default when 90 days is too long, before and
after a token is created."""

from __future__ import annotations

import datetime as dt
import re

import pytest
from django.utils import timezone

from portal.models import ApiToken
from portal.services.tenants import save_tenant

pytestmark = pytest.mark.django_db

OPTION = re.compile(r'<option value="([^"]+)"( selected)?>([^<]*)</option>')


def _lifetime_select(html: str) -> tuple[list[tuple[str, str]], str]:
    """(value, label) of each lifetime offered, and the selected value."""
    select = re.search(r'<select[^>]*name="lifetime"[^>]*>(.*?)</select>', html, re.S)
    assert select is not None
    options = OPTION.findall(select.group(1))
    selected = [value for value, chosen, _ in options if chosen]
    assert len(selected) == 1
    return [(value, label) for value, _, label in options], selected[0]


@pytest.fixture
def limit(team_a, alice):
    def set_limit(days: int) -> None:
        save_tenant(actor=alice, tenant=team_a, max_token_lifetime=dt.timedelta(days=days))

    return set_limit


def test_it_defaults_to_the_limit_and_offers_nothing_longer(client_as, bob, limit):
    limit(30)
    options, selected = _lifetime_select(client_as(bob).get("/account/tokens/").content.decode())
    assert options == [("7", "7 days"), ("never", "30d (the longest allowed)")]
    assert selected == "never"


def test_submitting_the_default_under_a_limit_creates_a_token_at_the_limit(client_as, bob, limit):
    limit(30)
    client = client_as(bob)
    _, selected = _lifetime_select(client.get("/account/tokens/").content.decode())
    response = client.post("/account/tokens/", {"name": "ci", "lifetime": selected})
    assert response.status_code == 200
    expires_at = ApiToken.objects.get(user=bob).expires_at
    assert expires_at is not None
    assert 29.9 < (expires_at - timezone.now()) / dt.timedelta(days=1) <= 30


def test_after_a_create_the_form_keeps_to_the_limit(client_as, bob, limit):
    limit(60)
    response = client_as(bob).post("/account/tokens/", {"name": "ci", "lifetime": "30"})
    assert response.status_code == 200
    options, selected = _lifetime_select(response.content.decode())
    assert [value for value, _ in options] == ["7", "30", "never"]
    assert selected == "never"


def test_a_limit_longer_than_90_days_keeps_90_days_as_the_default(client_as, bob, limit):
    limit(180)
    options, selected = _lifetime_select(client_as(bob).get("/account/tokens/").content.decode())
    assert options == [
        ("7", "7 days"),
        ("30", "30 days"),
        ("90", "90 days"),
        ("never", "180d (the longest allowed)"),
    ]
    assert selected == "90"


def test_without_a_limit_it_offers_up_to_a_year_and_never(client_as, bob):
    options, selected = _lifetime_select(client_as(bob).get("/account/tokens/").content.decode())
    assert [value for value, _ in options] == ["7", "30", "90", "365", "never"]
    assert selected == "90"


def test_it_offers_nothing_beyond_the_portals_longest_token(client_as, bob, settings):
    settings.API_TOKEN_MAX_DAYS = 60
    options, _ = _lifetime_select(client_as(bob).get("/account/tokens/").content.decode())
    assert [value for value, _ in options] == ["7", "30", "never"]


@pytest.mark.parametrize(
    ("lifetime", "message"),
    [
        ("abc", "Choose one of the lifetimes offered."),
        ("99999999999999999999", "Choose one of the lifetimes offered."),
        ("400", "A token may live between 1 and 365 days."),
    ],
)
def test_a_lifetime_not_offered_is_refused_clearly(client_as, bob, lifetime, message):
    response = client_as(bob).post("/account/tokens/", {"name": "ci", "lifetime": lifetime})
    assert response.status_code == 422
    assert message in response.content.decode()
    assert not ApiToken.objects.exists()
