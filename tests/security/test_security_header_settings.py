"""The operators' switches for the security headers (docs/configuration.md): report-only mode,
a report address, the identity provider's origins in ``form-action``, HSTS in production."""

from __future__ import annotations

import json

from tests.portal.test_settings import run_manage

PRODUCTION = {
    "DEBUG": "false",
    "SECRET_KEY": "kQ7-x9Lm2pZ4vR8sT1wY6uE3oI5aN0bC" * 2,
    "ALLOWED_HOSTS": "portal.example",
    "DATABASE_URL": "postgres://portal@127.0.0.1:5432/portal",
    "REDIS_URL": "redis://127.0.0.1:6379/0",
}
SHOW = (
    "import json; from django.conf import settings as s; print(json.dumps({"
    "'enforced': s.CONTENT_SECURITY_POLICY, 'report_only': s.CONTENT_SECURITY_POLICY_REPORT_ONLY,"
    "'hsts': s.SECURE_HSTS_SECONDS}))"
)


def settings_with(**env: str) -> dict:
    result = run_manage("shell", "-c", SHOW, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])


def test_the_policy_is_enforced_by_default_and_report_only_on_request():
    default = settings_with()
    assert default["report_only"] is None
    assert default["enforced"]["DIRECTIVES"]["script-src"] == ["'self'"]
    trying = settings_with(CSP_REPORT_ONLY="true", CSP_REPORT_URI="https://csp.example/report")
    assert trying["enforced"] is None
    assert trying["report_only"]["DIRECTIVES"]["report-uri"] == ["https://csp.example/report"]
    assert trying["report_only"]["DIRECTIVES"]["script-src"] == ["'self'"]


def test_forms_may_go_to_the_identity_providers_origins():
    configured = settings_with(
        OIDC_OP_AUTHORIZATION_ENDPOINT="https://idp.example.com/oauth2/authorize",
        OIDC_OP_LOGOUT_ENDPOINT="https://idp.example.com:8443/logout?x=1",
        OIDC_RP_CLIENT_ID="portal",
        CSP_FORM_ACTION="https://sso.example.org, https://idp.example.com/",
    )
    assert configured["enforced"]["DIRECTIVES"]["form-action"] == [
        "'self'",
        "https://idp.example.com",
        "https://idp.example.com:8443",
        "https://sso.example.org",
    ]


def test_a_form_action_that_is_not_an_origin_is_a_clear_error():
    result = run_manage("check", CSP_FORM_ACTION="https://idp.example.com/logout")
    assert result.returncode != 0
    assert "CSP_FORM_ACTION: 'https://idp.example.com/logout' is not an origin" in result.stderr


def test_hsts_is_on_in_production_and_can_be_turned_off():
    assert settings_with(**PRODUCTION)["hsts"] == 31536000
    assert settings_with(**PRODUCTION, SECURE_HSTS_SECONDS="0")["hsts"] == 0
    assert settings_with()["hsts"] == 0  # debug: a developer's localhost is not pinned
