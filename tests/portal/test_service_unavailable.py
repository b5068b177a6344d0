"""While the database or Redis is away, pages and the API answer 503 with Retry-After (the
portal's page, or the API's error format), never a 500, and answer again once it is back.

The database is made unreachable by pointing the default connection at a closed port (Django's
real PostgreSQL backend, refused at connect); Redis by pointing the cache at one. The restart
of real servers is ``test_outage_recovery.py``.
"""

from __future__ import annotations

import copy
import socket
from collections.abc import Iterator
from contextlib import contextmanager

import pytest
from django.db import connections
from django.db.backends.postgresql.base import DatabaseWrapper
from django.test import Client

from portal.services.api_tokens import issue_api_token


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@contextmanager
def database_away() -> Iterator[None]:
    """The default database refuses connections until the block ends."""
    settings_dict = copy.deepcopy(connections.settings["default"])
    settings_dict.update(
        ENGINE="django.db.backends.postgresql",
        HOST="127.0.0.1",
        PORT=str(closed_port()),
        NAME="portal",
        USER="portal",
        PASSWORD="",
        OPTIONS={"connect_timeout": 2},
        CONN_MAX_AGE=0,
        CONN_HEALTH_CHECKS=True,
    )
    real = connections["default"]
    connections["default"] = DatabaseWrapper(settings_dict, alias="default")
    try:
        yield
    finally:
        connections["default"].close()
        connections["default"] = real


@pytest.fixture
def redis_away(settings):
    settings.CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
        }
    }


def assert_page_503(response) -> None:
    assert response.status_code == 503, response.status_code
    assert response["Retry-After"] == "5"
    assert response["Content-Type"].startswith("text/html")
    assert b"unavailable for a moment" in response.content


def assert_api_503(response, service: str) -> None:
    assert response.status_code == 503, response.status_code
    assert response["Retry-After"] == "5"
    error = response.json()["error"]
    assert error["status"] == 503
    assert error["code"] == "service_unavailable"
    assert f"The portal's {service} is not answering" in error["message"]


@pytest.mark.django_db
def test_pages_answer_503_while_the_database_is_away(client_as, bob):
    client = client_as(bob)
    assert client.get("/claims/").status_code == 200
    with database_away():
        assert_page_503(client.get("/claims/"))
        assert_page_503(client.get("/"))
        assert_page_503(client.post("/login/", {"username": "bob", "password": "x"}))
    assert client.get("/claims/").status_code == 200  # back: the next request reconnects


@pytest.mark.django_db
def test_the_api_answers_503_in_its_format_while_the_database_is_away(bob):
    secret = issue_api_token(user=bob, name="ci", lifetime=None).secret
    client = Client(HTTP_AUTHORIZATION=f"Bearer {secret}")
    assert client.get("/api/v1/claim-requests/").status_code == 200
    with database_away():
        assert_api_503(client.get("/api/v1/claim-requests/"), "database")
        assert_api_503(client.get("/api/v1/devices/"), "database")
    assert client.get("/api/v1/claim-requests/").status_code == 200


@pytest.mark.django_db
def test_probes_tell_the_database_is_away(client):
    with database_away():
        assert client.get("/healthz").status_code == 200
        response = client.get("/readyz?exclude=mirror,apiserver")
        assert response.status_code == 503
        database = response.json()["checks"]["database"]
        assert database["ok"] is False
        assert database["reason"].startswith("OperationalError")
        assert client.get("/metrics").status_code == 200  # what it cannot read, it leaves out


@pytest.mark.django_db
def test_pages_and_the_api_answer_503_while_redis_is_away(client_as, bob, redis_away):
    assert_page_503(client_as(bob).get("/claims/"))  # the navigation reads the cache
    api = Client()
    api.force_login(bob)
    assert_api_503(api.get("/api/v1/claim-requests/"), "redis")  # throttling counts in it


@pytest.mark.django_db
def test_a_503_carries_the_request_id(client_as, bob):
    client = client_as(bob)
    with database_away():
        response = client.get("/claims/", HTTP_X_REQUEST_ID="outage-7")
    assert response.status_code == 503
    assert response["X-Request-ID"] == "outage-7"
