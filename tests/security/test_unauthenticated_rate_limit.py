"""Requests without valid credentials are counted per client address and throttled beyond
``API_THROTTLE_ANON_RATE`` (429 + ``Retry-After`` in the API's error format), although DRF
authenticates before it throttles. Measured before: 80 anonymous and 150 bad-token requests
from one address, all 401, none 429. Valid credentials are never counted against it, and a
forged ``X-Forwarded-For`` does not open a new count unless a trusted proxy sets it."""

from __future__ import annotations

import datetime as dt

import pytest
from rest_framework.test import APIClient

from portal.services.api_tokens import issue_api_token

pytestmark = pytest.mark.django_db
ME = "/api/v1/me/"
RATE = 5


@pytest.fixture(autouse=True)
def _anonymous_rate(settings):
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"user": "1000/minute", "anon": f"{RATE}/minute"},
    }


def bad_token(client, **extra):
    return client.get(ME, HTTP_AUTHORIZATION="Bearer drap_not-a-token", **extra)


def assert_throttled(response):
    assert response.status_code == 429, response.content
    error = response.json()["error"]
    assert (error["status"], error["code"]) == (429, "throttled")
    assert int(response["Retry-After"]) > 0


def test_anonymous_requests_beyond_the_rate_are_throttled():
    client = APIClient()
    assert [client.get(ME).status_code for _ in range(RATE)] == [401] * RATE
    assert_throttled(client.get(ME))


def test_bad_tokens_beyond_the_rate_are_throttled():
    client = APIClient()
    assert [bad_token(client).status_code for _ in range(RATE)] == [401] * RATE
    assert_throttled(bad_token(client))


def test_anonymous_and_bad_token_requests_share_the_address_count():
    client = APIClient()
    for _ in range(RATE // 2):
        assert client.get(ME).status_code == 401
    for _ in range(RATE - RATE // 2):
        assert bad_token(client).status_code == 401
    assert_throttled(client.get(ME))
    assert_throttled(bad_token(client))


def test_a_valid_token_from_a_throttled_address_still_works(bob):
    secret = issue_api_token(user=bob, name="ci", lifetime=dt.timedelta(days=1)).secret
    client = APIClient()
    for _ in range(RATE + 1):
        bad_token(client)
    assert_throttled(client.get(ME))
    assert client.get(ME, HTTP_AUTHORIZATION=f"Bearer {secret}").status_code == 200


def test_another_address_has_its_own_count():
    client = APIClient()
    for _ in range(RATE):
        client.get(ME)
    assert_throttled(client.get(ME))
    assert client.get(ME, REMOTE_ADDR="192.0.2.7").status_code == 401


def test_a_forged_forwarded_for_does_not_open_a_new_count():
    client = APIClient()
    answers = [
        client.get(ME, HTTP_X_FORWARDED_FOR=f"198.51.100.{i}").status_code for i in range(RATE + 1)
    ]
    assert answers == [401] * RATE + [429]


def test_behind_a_trusted_proxy_each_client_has_its_own_count(settings):
    settings.TRUSTED_PROXY_COUNT = 1
    client = APIClient()
    for _ in range(RATE):
        client.get(ME, HTTP_X_FORWARDED_FOR="forged, 198.51.100.1")
    assert_throttled(client.get(ME, HTTP_X_FORWARDED_FOR="198.51.100.1"))
    assert client.get(ME, HTTP_X_FORWARDED_FOR="198.51.100.2").status_code == 401
