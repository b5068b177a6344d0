"""``/healthz``: the process answers, whatever else is away, to anyone, by IP over HTTP."""

from __future__ import annotations

import pytest


def test_it_answers_ok_without_touching_the_database(client, django_assert_num_queries, db):
    with django_assert_num_queries(0):
        response = client.get("/healthz")
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}
    assert "no-cache" in response["Cache-Control"]


@pytest.mark.django_db
def test_the_kubelet_may_address_the_pod_by_ip_over_plain_http(client, settings):
    """The kubelet sends Host: <pod IP>:<port> and no TLS: no 400 for the host, no redirect."""
    settings.ALLOWED_HOSTS = ["portal.example.com"]
    settings.SECURE_SSL_REDIRECT = True
    for path in ("/healthz", "/readyz?exclude=mirror,apiserver"):
        response = client.get(path, HTTP_HOST="10.244.1.17:8000")
        assert response.status_code == 200, (path, response.status_code)
    # Every other page still checks the host and redirects to HTTPS.
    assert client.get("/login/", HTTP_HOST="10.244.1.17:8000").status_code == 400
    assert client.get("/login/", HTTP_HOST="portal.example.com").status_code == 301
