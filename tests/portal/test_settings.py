"""Settings: production mode refuses to start without its secrets."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def run_manage(*args: str, **env: str) -> subprocess.CompletedProcess[str]:
    clean = {
        k: v
        for k, v in os.environ.items()
        if k not in ("SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL", "DEBUG")
    }
    clean.update(env)
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT,
        env=clean,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_production_mode_refuses_to_start_without_its_secrets():
    result = run_manage("check", DEBUG="false")
    assert result.returncode != 0
    message = result.stderr.strip().splitlines()[-1]
    assert "ImproperlyConfigured" in message
    for name in ("SECRET_KEY", "ALLOWED_HOSTS", "DATABASE_URL", "REDIS_URL"):
        assert name in message


def test_production_mode_names_only_what_is_missing():
    result = run_manage("check", DEBUG="false", SECRET_KEY="x" * 60, ALLOWED_HOSTS="portal.example")
    message = result.stderr.strip().splitlines()[-1]
    assert "DATABASE_URL, REDIS_URL" in message
    assert "SECRET_KEY" not in message


def test_secrets_can_come_from_files(tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("s" * 60 + "\n")
    result = run_manage(
        "check",
        DEBUG="false",
        SECRET_KEY_FILE=str(secret),
        ALLOWED_HOSTS="portal.example",
        DATABASE_URL="postgres://portal@127.0.0.1:5432/portal",
        REDIS_URL="redis://127.0.0.1:6379/0",
    )
    assert result.returncode == 0, result.stderr


def test_the_deploy_checklist_is_clean_in_production_mode():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="false",
        SECRET_KEY="kQ7-x9Lm2pZ4vR8sT1wY6uE3oI5aN0bC" * 2,
        ALLOWED_HOSTS="portal.example",
        DATABASE_URL="postgres://portal@127.0.0.1:5432/portal",
        REDIS_URL="redis://127.0.0.1:6379/0",
    )
    assert result.returncode == 0, result.stderr + result.stdout


def test_a_misspelt_boolean_is_a_clear_error():
    result = run_manage("check", DEBUG="maybe")
    assert "DEBUG='maybe' is not a boolean" in result.stderr


def test_with_nothing_set_the_portal_runs_on_sqlite_with_in_process_tasks():
    result = run_manage(
        "shell",
        "-c",
        "from django.conf import settings as s; "
        "print(s.DATABASES['default']['ENGINE'], s.CELERY_TASK_ALWAYS_EAGER, s.DEBUG)",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "django.db.backends.sqlite3 True True"


def test_the_sign_in_lockout_is_configured_from_the_environment():
    result = run_manage(
        "shell",
        "-c",
        "from django.conf import settings as s; "
        "print(s.AXES_FAILURE_LIMIT, int(s.AXES_COOLOFF_TIME.total_seconds()), s.AXES_ENABLED, "
        "s.TRUSTED_PROXY_COUNT)",
        LOGIN_FAILURE_LIMIT="8",
        LOGIN_LOCKOUT_COOLOFF="1h",
        TRUSTED_PROXY_COUNT="1",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "8 3600 True 1"


def test_a_bad_lockout_setting_is_a_clear_error():
    assert "LOGIN_LOCKOUT_COOLOFF: 'soon' is not a duration" in (
        run_manage("check", LOGIN_LOCKOUT_COOLOFF="soon").stderr
    )
    assert "LOGIN_FAILURE_LIMIT must be at least 1" in (
        run_manage("check", LOGIN_FAILURE_LIMIT="0").stderr
    )


def test_a_bad_group_mapping_stops_the_start_naming_the_entry():
    result = run_manage(
        "check",
        OIDC_ISSUER="https://idp.example",
        OIDC_CLIENT_ID="portal",
        OIDC_CLIENT_SECRET="s",
        OIDC_GROUP_MAP="team-a-admins=team-a:owner",
    )
    assert result.returncode != 0
    assert "OIDC_GROUP_MAP: group 'team-a-admins': role 'owner' is not one of" in result.stderr


def test_single_sign_on_names_every_missing_setting():
    result = run_manage("check", OIDC_ISSUER="https://idp.example", OIDC_SIGN_ALGORITHM="none")
    message = result.stderr.strip().splitlines()[-1]
    assert "OIDC_CLIENT_ID is missing" in message
    assert "OIDC_CLIENT_SECRET (or OIDC_CLIENT_SECRET_FILE) is missing" in message
    assert "OIDC_SIGN_ALGORITHM='none' is not one of" in message


def test_production_single_sign_on_needs_an_https_issuer():
    result = run_manage(
        "check",
        DEBUG="false",
        SECRET_KEY="kQ7-x9Lm2pZ4vR8sT1wY6uE3oI5aN0bC" * 2,
        ALLOWED_HOSTS="portal.example",
        DATABASE_URL="postgres://portal@127.0.0.1:5432/portal",
        REDIS_URL="redis://127.0.0.1:6379/0",
        OIDC_ISSUER="http://idp.example",
        OIDC_CLIENT_ID="portal",
        OIDC_CLIENT_SECRET="s",
    )
    assert "OIDC_ISSUER='http://idp.example' must use https in production" in result.stderr


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"LOCAL_LOGIN": "off"}, "LOCAL_LOGIN=off without single sign-on"),
        ({"LOCAL_LOGIN": "sometimes"}, "LOCAL_LOGIN='sometimes' is not one of all, listed, off"),
        ({"LOCAL_LOGIN": "listed"}, "LOCAL_LOGIN=listed needs LOCAL_LOGIN_USERS"),
    ],
)
def test_a_local_login_setting_that_locks_everyone_out_is_refused(env, message):
    result = run_manage("check", **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_single_sign_on_with_a_break_glass_account_and_its_secret_from_a_file(tmp_path):
    secret = tmp_path / "client-secret"
    secret.write_text("s3cret\n")
    result = run_manage(
        "shell",
        "-c",
        "from django.conf import settings as s; "
        "print(s.LOCAL_LOGIN, s.LOCAL_LOGIN_USERS, s.OIDC_RP_CLIENT_SECRET, s.OIDC_USE_PKCE)",
        OIDC_ISSUER="https://idp.example/realms/main",
        OIDC_CLIENT_ID="portal",
        OIDC_CLIENT_SECRET_FILE=str(secret),
        LOCAL_LOGIN_USERS="breakglass",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip().splitlines()[-1] == "listed ['breakglass'] s3cret True"


def test_the_deploy_checklist_is_clean_with_single_sign_on():
    result = run_manage(
        "check",
        "--deploy",
        "--fail-level",
        "WARNING",
        DEBUG="false",
        SECRET_KEY="kQ7-x9Lm2pZ4vR8sT1wY6uE3oI5aN0bC" * 2,
        ALLOWED_HOSTS="portal.example",
        DATABASE_URL="postgres://portal@127.0.0.1:5432/portal",
        REDIS_URL="redis://127.0.0.1:6379/0",
        OIDC_ISSUER="https://idp.example",
        OIDC_CLIENT_ID="portal",
        OIDC_CLIENT_SECRET="s",
        OIDC_GROUP_MAP="team-a-admins=team-a:tenant_admin",
        LOCAL_LOGIN="off",
    )
    assert result.returncode == 0, result.stderr + result.stdout
