"""A single sign-on session goes back through the provider (silently, prompt=none) once
OIDC_RENEW_SECONDS have passed, on whole-page loads only."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

import pytest
from django.test import Client

from portal.sign_in.provider import forget_metadata

pytestmark = pytest.mark.django_db

OIDC = "portal.sign_in.backends.OidcBackend"
LOCAL = "portal.sign_in.backends.LocalPasswordBackend"


@pytest.fixture
def provider(settings) -> Iterator[str]:
    """A loopback server that publishes a discovery document (the refresh reads no more)."""

    class Discovery(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 (the standard library's name)
            issuer = f"http://127.0.0.1:{self.server.server_address[1]}"
            body = json.dumps(
                {
                    "issuer": issuer,
                    "authorization_endpoint": f"{issuer}/auth",
                    "token_endpoint": f"{issuer}/token",
                    "userinfo_endpoint": f"{issuer}/me",
                    "jwks_uri": f"{issuer}/jwks",
                }
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Discovery)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    issuer = f"http://127.0.0.1:{server.server_address[1]}"
    settings.OIDC_ISSUER = issuer
    settings.OIDC_ENABLED = True
    settings.OIDC_RP_CLIENT_ID = "portal"
    settings.OIDC_RP_CLIENT_SECRET = "client-secret-0123456789-0123456789"
    settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 900
    forget_metadata()
    yield issuer
    server.shutdown()
    server.server_close()
    forget_metadata()


def signed_in(user, backend: str, *, expires_in: float) -> Client:
    client = Client()
    client.force_login(user, backend=backend)
    session = client.session
    session["oidc_id_token_expiration"] = time.time() + expires_in
    session.save()
    return client


def test_an_expired_single_sign_on_session_goes_back_through_the_provider(provider, alice):
    response = signed_in(alice, OIDC, expires_in=-1).get("/tenants/")
    assert response.status_code == 302
    location = urlsplit(response["Location"])
    assert f"{location.scheme}://{location.netloc}{location.path}" == f"{provider}/auth"
    query = parse_qs(location.query)
    assert query["prompt"] == ["none"]
    assert query["client_id"] == ["portal"]
    assert query["redirect_uri"] == ["http://testserver/oidc/callback/"]
    assert query["code_challenge_method"] == ["S256"]


def test_a_fresh_session_is_left_alone(provider, alice):
    assert signed_in(alice, OIDC, expires_in=600).get("/tenants/").status_code == 200


@pytest.mark.parametrize(
    ("path", "headers"),
    [("/tenants/", {"HTTP_HX_REQUEST": "true"}), ("/api/v1/tenants/", {})],
)
def test_fragments_and_the_api_are_never_sent_to_the_provider(provider, alice, path, headers):
    assert signed_in(alice, OIDC, expires_in=-1).get(path, **headers).status_code == 200


def test_password_sessions_are_never_sent_to_the_provider(provider, alice):
    assert signed_in(alice, LOCAL, expires_in=-1).get("/tenants/").status_code == 200


def test_renewal_can_be_turned_off(provider, settings, alice):
    settings.OIDC_RENEW_ID_TOKEN_EXPIRY_SECONDS = 0
    assert signed_in(alice, OIDC, expires_in=-1).get("/tenants/").status_code == 200
