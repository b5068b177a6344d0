"""Every response carries the security headers: pages, the API (its own error format too), the
admin, the API documentation, redirects to the login, the request limits' refusals and the
error pages (docs/security.md, "Headers")."""

from __future__ import annotations

import pytest
from django.test import override_settings
from django.urls import reverse

from tests.portal.test_url_access import (
    POST_ONLY,
    all_url_names,
    sample_kwargs,
    team_a_objects,  # noqa: F401 - the fixture the URL samples point at
)

STRICT_DIRECTIVES = (
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    "object-src 'none'",
    "base-uri 'self'",
    "frame-ancestors 'none'",
    "form-action 'self'",
)


def assert_security_headers(response, what: str) -> None:
    policy = response.get("Content-Security-Policy", "")
    directives = {d.strip() for d in policy.split(";")}
    for directive in STRICT_DIRECTIVES:
        assert directive in directives, f"{what}: no {directive!r} in {policy!r}"
    assert "unsafe" not in policy, f"{what}: {policy}"
    permissions = response.get("Permissions-Policy", "")
    for feature in ("camera=()", "microphone=()", "geolocation=()", "usb=()", "payment=()"):
        assert feature in permissions, f"{what}: no {feature} in {permissions!r}"
    assert response.get("X-Content-Type-Options") == "nosniff", what
    assert response.get("Referrer-Policy") == "same-origin", what
    assert response.get("Cross-Origin-Opener-Policy") == "same-origin", what
    assert response.get("X-Frame-Options") == "DENY", what


@pytest.mark.django_db
def test_every_page_and_api_response_carries_the_security_headers(
    client,
    client_as,
    root,
    team_a_objects,  # noqa: F811 - the fixture imported above
):
    signed_in = client_as(root)
    checked = 0
    for name, params in all_url_names():
        url = reverse(name, kwargs=sample_kwargs(name, params, team_a_objects))
        for who, http in (("root", signed_in), ("anonymous", client)):
            response = http.post(url) if name.endswith(POST_ONLY) else http.get(url)
            assert_security_headers(response, f"{url} as {who} ({response.status_code})")
            checked += 1
    assert checked >= 100


@pytest.mark.django_db
def test_the_admin_the_api_docs_and_the_error_answers_carry_them(client, client_as, root):
    signed_in = client_as(root)
    for url in ("/admin/", "/admin/portal/tenant/", "/api/docs/", "/api/docs/?script="):
        response = signed_in.get(url)
        assert response.status_code == 200, url
        assert_security_headers(response, url)
    refusals = {
        "/devices/no.such/pool/device/": 404,  # the portal's 404 page
        "/api/v1/no-such-thing/": 404,  # the router's 404, in the API's error format
        "/devices/?" + "a=1&" * 60: 400,  # the request limits
        "/api/v1/devices/?" + "a=1&" * 60: 400,
        "/" + "x" * 3000: 404,
    }
    for url, status in refusals.items():
        response = signed_in.get(url)
        assert response.status_code == status, url
        assert_security_headers(response, f"{url[:40]} ({status})")
    too_large = signed_in.post(
        "/api/v1/tenants/", data="{}", content_type="application/json", CONTENT_LENGTH=10**8
    )
    assert too_large.status_code == 413
    assert_security_headers(too_large, "a 413")
    assert_security_headers(client.get("/login/"), "the login page")


@override_settings(DEBUG=False)
@pytest.mark.django_db
def test_server_errors_carry_them_on_pages_and_in_the_api(client_as, api_as, bob, monkeypatch):
    from portal.api import views as api_views
    from portal.views import api_tokens

    def explode(*args, **kwargs):
        raise RuntimeError("boom")

    monkeypatch.setattr(api_tokens, "token_policy", explode)
    monkeypatch.setattr(api_views.CurrentUserView, "get", explode)
    page_client, api_client = client_as(bob), api_as(bob)
    page_client.raise_request_exception = api_client.raise_request_exception = False
    page = page_client.get("/account/tokens/")
    assert page.status_code == 500
    assert_security_headers(page, "the 500 page")
    api = api_client.get("/api/v1/me/")
    assert api.status_code == 500
    assert_security_headers(api, "an API 500")


@override_settings(
    SECURE_HSTS_SECONDS=31536000,
    SECURE_HSTS_INCLUDE_SUBDOMAINS=True,
    SECURE_PROXY_SSL_HEADER=("HTTP_X_FORWARDED_PROTO", "https"),
)
@pytest.mark.django_db
def test_https_answers_behind_a_trusted_proxy_carry_hsts_errors_included(client_as, root):
    signed_in = client_as(root)
    hsts = "max-age=31536000; includeSubDomains"
    for url in ("/", "/api/v1/devices/", "/api/v1/no-such-thing/", "/devices/?" + "a=1&" * 60):
        response = signed_in.get(url, headers={"X-Forwarded-Proto": "https"})
        assert response.get("Strict-Transport-Security") == hsts, url
    assert "Strict-Transport-Security" not in signed_in.get("/")  # plain HTTP: browsers ignore it
