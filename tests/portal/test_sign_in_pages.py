"""The login page, single sign-on's start and callback when things go wrong, and what the
settings allow: the provider's button, the password form, break-glass accounts."""

from __future__ import annotations

import time

import jwt
import pytest
from django.contrib.auth import authenticate
from django.contrib.messages import get_messages
from django.core.exceptions import SuspiciousOperation
from django.test import Client

from portal.sign_in.backends import OidcBackend
from portal.sign_in.provider import forget_metadata
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

LOCAL = "portal.sign_in.backends.LocalPasswordBackend"
PASSWORD = "correct horse battery"


@pytest.fixture
def single_sign_on(settings):
    """Single sign-on configured for a provider nobody answers at (a closed loopback port)."""
    settings.OIDC_ISSUER = "http://127.0.0.1:9"
    settings.OIDC_ENABLED = True
    settings.OIDC_PROVIDER_NAME = "Example SSO"
    settings.OIDC_RP_CLIENT_ID = "portal"
    settings.OIDC_RP_CLIENT_SECRET = "client-secret-0123456789-0123456789"
    settings.OIDC_TIMEOUT = 2
    forget_metadata()
    yield settings
    forget_metadata()


def message_texts(response):
    return [str(message) for message in get_messages(response.wsgi_request)]


def test_without_single_sign_on_the_page_is_the_password_form(client):
    content = client.get("/login/").content.decode()
    assert 'id="id_password"' in content
    assert "Sign in with" not in content


def test_with_single_sign_on_the_page_offers_the_provider_and_passwords(client, single_sign_on):
    single_sign_on.LOCAL_LOGIN = "all"
    content = client.get("/login/?next=/claims/").content.decode()
    assert "Sign in with Example SSO" in content
    assert 'href="/oidc/authenticate/?next=/claims/"' in content
    assert 'id="id_password"' in content and "Break-glass" not in content


def test_with_passwords_off_there_is_no_form_and_a_password_is_refused(
    client, single_sign_on, alice
):
    single_sign_on.LOCAL_LOGIN = "off"
    assert 'id="id_password"' not in client.get("/login/").content.decode()
    response = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert response.status_code == 403
    assert "Signing in with a password is turned off: use Example SSO." in response.content.decode()
    assert "_auth_user_id" not in client.session


def test_only_listed_break_glass_accounts_sign_in_with_a_password(client, single_sign_on, alice):
    single_sign_on.LOCAL_LOGIN = "listed"
    single_sign_on.LOCAL_LOGIN_USERS = ["breakglass"]
    UserFactory(username="breakglass", is_staff=True)
    assert "Break-glass" in client.get("/login/").content.decode()

    refused = client.post("/login/", {"username": "alice", "password": PASSWORD})
    assert refused.status_code == 200
    assert "correct username and password" in refused.content.decode()
    accepted = client.post("/login/", {"username": "breakglass", "password": PASSWORD})
    assert accepted.status_code == 302 and accepted["Location"] == "/"


def test_a_password_session_ends_when_its_account_may_no_longer_use_passwords(
    single_sign_on, alice
):
    single_sign_on.LOCAL_LOGIN = "all"
    client = Client()
    client.force_login(alice, backend=LOCAL)
    assert client.get("/").status_code == 200
    single_sign_on.LOCAL_LOGIN = "off"
    response = client.get("/")
    assert response.status_code == 302 and response["Location"] == "/login/?next=/"


def test_the_provider_backend_never_answers_a_password(single_sign_on, rf, alice):
    single_sign_on.LOCAL_LOGIN = "all"
    request = rf.post("/login/?code=x&state=y")
    assert OidcBackend().authenticate(request, username="alice", password=PASSWORD) is None
    assert authenticate(request, username="alice", password=PASSWORD).backend == LOCAL


def test_single_sign_on_pages_are_absent_without_single_sign_on(client):
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404


def test_an_unreachable_provider_is_explained_on_the_login_page(client, single_sign_on):
    response = client.get("/oidc/authenticate/")
    assert response.status_code == 302 and response["Location"] == "/login/"
    assert message_texts(response) == [
        "Example SSO cannot be reached right now, so single sign-on is not possible. "
        "Try again in a minute; if it persists, tell a portal admin."
    ]


def test_an_answer_this_browser_did_not_ask_for_is_refused(client, single_sign_on):
    response = client.get("/oidc/callback/?code=abc&state=forged")
    assert response["Location"] == "/login/"
    assert message_texts(response) == ["This sign-in had expired or was not started here."]


def test_a_refusal_by_the_provider_is_explained(client, single_sign_on):
    response = client.get(
        "/oidc/callback/?error=access_denied&error_description=Not+for+you&state=s"
    )
    assert message_texts(response) == [
        "Example SSO refused the sign-in (access_denied). Not for you"
    ]


def test_a_session_the_provider_ended_signs_the_person_out(client_as, single_sign_on, alice):
    client = client_as(alice)
    response = client.get("/oidc/callback/?error=login_required&state=s")
    assert message_texts(response) == ["Your session at Example SSO has ended: sign in again."]
    assert "_auth_user_id" not in client.session


def test_signing_out_a_password_session_does_not_visit_the_provider(single_sign_on, alice):
    client = Client()
    client.force_login(alice, backend=LOCAL)
    response = client.post("/logout/")
    assert response["Location"] == "/login/"


def id_token(**overrides):
    now = int(time.time())
    claims = {
        "iss": "http://127.0.0.1:9",
        "aud": "portal",
        "sub": "0001",
        "nonce": "n-0S6",
        "iat": now,
        "exp": now + 300,
        **overrides,
    }
    return jwt.encode(claims, "client-secret-0123456789-0123456789", algorithm="HS256")


@pytest.mark.parametrize(
    ("overrides", "problem"),
    [
        ({"iss": "https://evil.example"}, "is not OIDC_ISSUER"),
        ({"aud": "another-client"}, "audience does not include OIDC_CLIENT_ID"),
        ({"aud": ["portal", "other"], "azp": "other"}, "authorized party"),
        ({"nonce": "replayed"}, "Nonce verification failed"),
    ],
)
def test_an_id_token_for_someone_else_is_refused(single_sign_on, overrides, problem):
    single_sign_on.OIDC_RP_SIGN_ALGO = "HS256"
    with pytest.raises(SuspiciousOperation, match=problem):
        OidcBackend().verify_token(id_token(**overrides), nonce="n-0S6")


def test_an_id_token_for_this_portal_is_accepted(single_sign_on):
    single_sign_on.OIDC_RP_SIGN_ALGO = "HS256"
    token = id_token(aud=["portal", "other"], azp="portal")
    assert OidcBackend().verify_token(token, nonce="n-0S6")["sub"] == "0001"
