"""API tokens: created in the UI, shown once, stored hashed, expiring, revocable."""

from __future__ import annotations

import datetime as dt

import pytest
from django.core.exceptions import ValidationError
from django.utils import timezone
from rest_framework.test import APIClient

from portal.models import ApiToken, AuditEvent
from portal.services.api_tokens import issue_api_token, revoke_api_token


def bearer(secret: str) -> APIClient:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION=f"Bearer {secret}")
    return client


@pytest.mark.django_db
def test_a_token_created_in_the_ui_is_shown_once_and_works(client_as, alice):
    client = client_as(alice)
    response = client.post("/account/tokens/", {"name": "CI pipeline", "lifetime": "30"})
    assert response.status_code == 200
    secret = response.context["issued"].secret
    assert secret.encode() in response.content
    assert secret.encode() not in client.get("/account/tokens/").content

    me = bearer(secret).get("/api/v1/me/")
    assert me.status_code == 200
    assert me.json()["username"] == "alice"
    token = ApiToken.objects.get(user=alice)
    assert token.last_used_at is not None
    assert token.expires_at - timezone.now() > dt.timedelta(days=29)


@pytest.mark.django_db
def test_the_token_is_never_stored_in_clear(alice):
    issued = issue_api_token(user=alice, name="ci", lifetime=None)
    row = ApiToken.objects.filter(pk=issued.token.pk).values().get()
    assert all(issued.secret not in str(value) for value in row.values())
    assert issued.secret not in str(list(AuditEvent.objects.values()))


@pytest.mark.django_db
def test_a_revoked_token_is_rejected(client_as, alice):
    issued = issue_api_token(user=alice, name="ci", lifetime=None)
    client_as(alice).post(f"/account/tokens/{issued.token.pk}/revoke/")
    response = bearer(issued.secret).get("/api/v1/me/")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "Invalid or revoked API token."


@pytest.mark.django_db
def test_revoking_twice_is_harmless_and_audited_once(alice):
    issued = issue_api_token(user=alice, name="ci", lifetime=None)
    revoke_api_token(user=alice, token_id=issued.token.pk)
    revoke_api_token(user=alice, token_id=issued.token.pk)
    assert AuditEvent.objects.filter(action=AuditEvent.Action.TOKEN_REVOKED).count() == 1


@pytest.mark.django_db
def test_an_expired_token_is_rejected(alice):
    issued = issue_api_token(user=alice, name="ci", lifetime=dt.timedelta(days=1))
    ApiToken.objects.filter(pk=issued.token.pk).update(expires_at=timezone.now())
    response = bearer(issued.secret).get("/api/v1/me/")
    assert response.status_code == 401
    assert response.json()["error"]["message"] == "This API token has expired."


@pytest.mark.django_db
def test_an_unknown_token_is_rejected(db):
    response = bearer("drap_not-a-real-token").get("/api/v1/me/")
    assert response.status_code == 401
    assert response["WWW-Authenticate"] == "Bearer"


@pytest.mark.django_db
def test_a_user_cannot_revoke_someone_elses_token(client_as, alice, carol):
    issued = issue_api_token(user=alice, name="ci", lifetime=None)
    assert client_as(carol).post(f"/account/tokens/{issued.token.pk}/revoke/").status_code == 404
    assert ApiToken.objects.get(pk=issued.token.pk).revoked_at is None


@pytest.mark.django_db
def test_a_token_has_exactly_its_users_permissions(carol, team_a):
    issued = issue_api_token(user=carol, name="ci", lifetime=None)
    client = bearer(issued.secret)
    assert client.get("/api/v1/tenants/team-a/").status_code == 404
    assert client.get("/api/v1/tenants/team-b/").status_code == 200
    assert client.post("/api/v1/tenants/", {"name": "Evil"}, format="json").status_code == 403


@pytest.mark.django_db
def test_a_token_needs_a_name_and_a_bounded_lifetime(alice):
    with pytest.raises(ValidationError):
        issue_api_token(user=alice, name="  ", lifetime=None)
    with pytest.raises(ValidationError):
        issue_api_token(user=alice, name="x", lifetime=dt.timedelta(days=5000))


@pytest.mark.django_db
def test_the_token_form_explains_a_missing_name(client_as, alice):
    response = client_as(alice).post("/account/tokens/", {"name": "", "lifetime": "30"})
    assert response.status_code == 422
    assert b"This field is required." in response.content
    assert not ApiToken.objects.exists()


@pytest.mark.django_db
def test_htmx_gets_the_token_panel_with_its_errors_on_a_validation_error(client_as, alice):
    response = client_as(alice).post(
        "/account/tokens/", {"name": "", "lifetime": "30"}, HTTP_HX_REQUEST="true"
    )
    # 422 plus the re-rendered panel: static/js/portal.js tells htmx to swap 422 responses.
    assert response.status_code == 422
    assert b"<html" not in response.content
    assert b'id="token-panel"' in response.content
    assert b'class="form-control is-invalid"' in response.content
    assert b"This field is required." in response.content


@pytest.mark.django_db
def test_htmx_gets_only_the_token_panel(client_as, alice):
    response = client_as(alice).post(
        "/account/tokens/", {"name": "ci", "lifetime": "never"}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert b"<html" not in response.content
    assert b'id="token-panel"' in response.content
    assert "HX-Request" in response["Vary"]
