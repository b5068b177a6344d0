"""Password sign-in locks out after ``LOGIN_FAILURE_LIMIT`` wrong passwords for one username
from one address (django-axes): a 429 page that says why and for how long, one audit event per
lockout, a cool-off, and portal admins can unlock. Measured before: 200 wrong passwords for one
user in 59 s, every one answered, no lockout and no delay."""

from __future__ import annotations

import datetime as dt

import pytest
from axes.models import AccessAttempt
from django.core.management import call_command
from django.db.models import F

from portal.models import AuditEvent

pytestmark = pytest.mark.django_db
LIMIT = 3
PASSWORD = "correct horse battery"  # tests/factories.py


@pytest.fixture(autouse=True)
def _lockout(settings):
    settings.AXES_FAILURE_LIMIT = LIMIT
    settings.AXES_COOLOFF_TIME = dt.timedelta(minutes=15)


def sign_in(client, username, password="wrong", address="127.0.0.1", path="/login/", **extra):  # noqa: S107
    data = {"username": username, "password": password}
    return client.post(path, data, REMOTE_ADDR=address, **extra)


def signed_in(response) -> bool:
    return response.status_code == 302 and response["Location"] == "/"


def lockouts():
    return AuditEvent.objects.filter(action=AuditEvent.Action.SIGN_IN_LOCKED_OUT)


def test_wrong_passwords_lock_the_user_out_from_that_address(client, bob):
    answers = [sign_in(client, "bob").status_code for _ in range(LIMIT - 1)]
    assert answers == [200] * (LIMIT - 1)  # the form again, with its error
    locked = sign_in(client, "bob")
    assert locked.status_code == 429
    assert "registration/locked_out.html" in [t.name for t in locked.templates]
    page = locked.content.decode()
    assert "Too many wrong passwords for <strong>bob</strong>" in page
    assert "15\xa0minutes" in page
    assert locked["Retry-After"] == "900"
    # Even the right password is refused now, and no session is made.
    assert sign_in(client, "bob", PASSWORD).status_code == 429
    assert "_auth_user_id" not in client.session


def test_two_hundred_wrong_passwords_are_refused_after_the_limit(client, bob):
    statuses = [sign_in(client, "bob").status_code for _ in range(200)]
    assert statuses.count(200) == LIMIT - 1
    assert statuses[LIMIT - 1 :] == [429] * (200 - LIMIT + 1)


def test_one_lockout_is_one_audit_event_for_portal_admins(client, api_as, bob, alice, root):
    for _ in range(LIMIT + 5):
        sign_in(client, "bob")
    event = lockouts().get()
    assert (event.object_type, event.object_id, event.object_repr) == (
        "auth.User",
        str(bob.pk),
        "bob",
    )
    assert event.actor is None and event.tenant is None
    assert event.before == {"locked_out": False}
    assert event.after == {
        "locked_out": True,
        "address": "127.0.0.1",
        "failures": LIMIT,
        "cool_off_seconds": 900,
    }
    assert event.get_action_display() == "Sign-in locked out"
    seen = api_as(root).get("/api/v1/audit-events/?action=sign_in_locked_out").json()
    assert [row["object_repr"] for row in seen["results"]] == ["bob"]
    assert api_as(alice).get("/api/v1/audit-events/").json()["results"] == []


def test_a_name_nobody_has_is_locked_out_and_audited_too(client):
    for _ in range(LIMIT):
        sign_in(client, "nobody")
    assert sign_in(client, "nobody").status_code == 429
    event = lockouts().get()
    assert (event.object_id, event.object_repr) == ("", "nobody")


def test_the_lock_holds_one_username_at_one_address(client, bob, alice):
    for _ in range(LIMIT):
        sign_in(client, "bob")
    assert signed_in(sign_in(client, "bob", PASSWORD, address="192.0.2.7"))
    assert signed_in(sign_in(client, "alice", PASSWORD))


def test_a_forged_forwarded_for_does_not_dodge_the_lock(client, bob):
    for i in range(LIMIT):
        sign_in(client, "bob", HTTP_X_FORWARDED_FOR=f"198.51.100.{i}")
    assert sign_in(client, "bob", PASSWORD, HTTP_X_FORWARDED_FOR="198.51.100.99").status_code == 429


def test_a_successful_sign_in_clears_the_count(client, bob):
    for _ in range(LIMIT - 1):
        sign_in(client, "bob")
    assert signed_in(sign_in(client, "bob", PASSWORD))
    client.post("/logout/")
    for _ in range(LIMIT - 1):
        assert sign_in(client, "bob").status_code == 200


def test_the_lock_ends_after_the_cool_off(client, bob):
    for _ in range(LIMIT):
        sign_in(client, "bob")
    assert sign_in(client, "bob", PASSWORD).status_code == 429
    # Sixteen minutes later (moved back in the database rather than waited for).
    AccessAttempt.objects.update(attempt_time=F("attempt_time") - dt.timedelta(minutes=16))
    assert signed_in(sign_in(client, "bob", PASSWORD))


def test_a_portal_admin_unlocks_in_the_admin(client, client_as, bob, root):
    for _ in range(LIMIT):
        sign_in(client, "bob")
    attempt = AccessAttempt.objects.get(username="bob")
    admin = client_as(root)
    assert "bob" in admin.get("/admin/axes/accessattempt/").content.decode()
    admin.post(f"/admin/axes/accessattempt/{attempt.pk}/delete/", {"post": "yes"})
    assert signed_in(sign_in(client, "bob", PASSWORD))


def test_a_command_unlocks_a_username(client, bob):
    for _ in range(LIMIT):
        sign_in(client, "bob")
    call_command("axes_reset_username", "bob")
    assert signed_in(sign_in(client, "bob", PASSWORD))


def test_the_admin_sign_in_is_locked_out_too(client, root):
    for _ in range(LIMIT):
        sign_in(client, "root", path="/admin/login/")
    assert sign_in(client, "root", PASSWORD, path="/admin/login/").status_code == 429


def test_a_script_gets_the_lockout_in_the_api_error_format(client, bob):
    for _ in range(LIMIT):
        sign_in(client, "bob")
    response = sign_in(client, "bob", PASSWORD, HTTP_X_REQUESTED_WITH="XMLHttpRequest")
    assert response.status_code == 429
    error = response.json()["error"]
    assert (error["status"], error["code"]) == (429, "locked_out")
    assert "15\xa0minutes" in error["message"]
    assert response["Retry-After"] == "900"


def test_only_password_sign_ins_are_counted(client, rf, bob):
    """A sign-in without a password (another backend's, e.g. a single sign-on callback) that
    fails is neither counted nor locked out, however often it fails from one address."""
    from django.contrib.auth import authenticate

    request = rf.post("/oidc/callback/", REMOTE_ADDR="127.0.0.1")
    for _ in range(LIMIT * 3):
        assert authenticate(request, code="stale", state="x") is None
    assert not AccessAttempt.objects.exists()
    assert signed_in(sign_in(client, "bob", PASSWORD))
