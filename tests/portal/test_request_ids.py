"""Every response carries ``X-Request-ID``: the client's when it is a well-formed id, else a new
one; the same id is on the request's log lines."""

from __future__ import annotations

import pytest


@pytest.mark.django_db
def test_a_well_formed_incoming_id_is_kept_and_echoed(client):
    for request_id in ("4bf92f3577b34da6a3ce929d0e0e4736", "req-2025.01:7", "a/b+c="):
        response = client.get("/login/", HTTP_X_REQUEST_ID=request_id)
        assert response["X-Request-ID"] == request_id


@pytest.mark.django_db
def test_a_missing_or_malformed_id_is_replaced_by_a_new_one(client):
    seen = set()
    for header in (None, "", "has spaces", "line\nbreak", "x" * 129, "-leading-dash", "é"):
        extra = {} if header is None else {"HTTP_X_REQUEST_ID": header}
        request_id = client.get("/login/", **extra)["X-Request-ID"]
        assert request_id != header
        assert len(request_id) == 32 and request_id.isalnum()
        seen.add(request_id)
    assert len(seen) == 7


@pytest.mark.django_db
def test_api_errors_and_probes_carry_it_too(client):
    assert client.get("/api/v1/devices/", HTTP_X_REQUEST_ID="r1")["X-Request-ID"] == "r1"
    assert client.get("/healthz", HTTP_X_REQUEST_ID="r2")["X-Request-ID"] == "r2"
    assert client.get("/no-such-page/", HTTP_X_REQUEST_ID="r3")["X-Request-ID"] == "r3"
