"""Single sign-on through a real OpenID provider (panva's oidc-provider, OpenID Certified, run as
its own process): a person signs in at the provider and lands in the tenant and role their
groups give; without a mapped group they see why; signing out ends the provider's session too;
break-glass passwords work only as LOCAL_LOGIN allows."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from portal.models import ExternalIdentity, Membership
from portal.security_headers import content_security_policy
from portal.sign_in.groups import parse_group_map
from portal.sign_in.provider import forget_metadata
from tests.factories import UserFactory
from tests.oidc.provider import PASSWORD, OpenIdProvider

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

USERS = {
    "ada": {"groups": ["team-a-admins", "staff"], "name": "Ada Lovelace", "given_name": "Ada"},
    "grace": {"groups": ["team-b"], "name": "Grace Hopper", "given_name": "Grace"},
    "linus": {"groups": ["contractors"], "name": "Linus", "given_name": "Linus"},
}


@pytest.fixture
def provider(live_server, settings, chromium_path, team_a, team_b) -> Iterator[OpenIdProvider]:
    with OpenIdProvider(portal_url=live_server.url, users=USERS) as idp:
        for name, value in idp.portal_settings().items():
            setattr(settings, name, value)
        # In production the OIDC_* variables put the provider's origin into form-action at
        # start; here the provider starts with the test (signing out posts, then redirects).
        settings.CONTENT_SECURITY_POLICY = content_security_policy(form_action=[idp.issuer])
        settings.OIDC_GROUP_MAP = parse_group_map(
            "team-a-admins=team-a:tenant_admin, team-b=team-b:member"
        )
        settings.LOCAL_LOGIN = "listed"
        settings.LOCAL_LOGIN_USERS = ["breakglass"]
        forget_metadata()
        yield idp
    forget_metadata()


def sign_in_at_provider(page, live_server, username: str, *, asked: bool = True) -> None:
    page.goto(f"{live_server.url}/login/")
    page.click("[data-testid=sign-in-oidc]")
    if asked:
        page.wait_for_selector("#idp-username")
        page.fill("#idp-username", username)
        page.fill("#idp-password", PASSWORD)
        page.click("#idp-submit")
    page.wait_for_url(f"{live_server.url}/")


def test_a_tenant_admin_signs_in_at_the_provider_and_lands_in_her_tenant(
    browser_page, live_server, provider, team_a, artifacts_dir
):
    page = browser_page
    page.goto(f"{live_server.url}/login/")
    assert page.locator("[data-testid=sign-in-oidc]").inner_text().strip() == (
        "Sign in with Test IdP"
    )
    page.screenshot(path=artifacts_dir / "login-sso.png", full_page=True)

    sign_in_at_provider(page, live_server, "ada")
    page.wait_for_selector("h1:has-text('Dashboard')")
    assert page.locator("[data-testid=user-menu]").inner_text().strip() == "ada"
    assert page.locator("text=Hello Ada").is_visible()
    assert page.locator("a:has-text('Team A')").first.is_visible()
    assert page.locator("nav a:has-text('Approvals')").is_visible()  # a tenant admin's menu
    page.screenshot(path=artifacts_dir / "dashboard-sso.png", full_page=True)

    membership = Membership.objects.get(user__username="ada")
    assert (membership.tenant, membership.role, membership.source) == (
        team_a,
        Membership.Role.TENANT_ADMIN,
        Membership.Source.IDENTITY_PROVIDER,
    )
    identity = ExternalIdentity.objects.get(user__username="ada")
    assert (identity.issuer, identity.subject) == (provider.issuer, "ada")
    # The authorization request the provider received carried a PKCE challenge (S256).
    request = provider.authorizations()[-1]
    assert request["code_challenge_method"] == "S256"
    assert len(request["code_challenge"]) == 43
    assert request["client_id"] == "dra-portal"
    assert "groups" in request["scope"].split()


def test_a_member_of_team_b_lands_in_team_b_as_a_member(
    browser_page, live_server, provider, team_b
):
    page = browser_page
    sign_in_at_provider(page, live_server, "grace")
    page.wait_for_selector("h1:has-text('Dashboard')")
    assert page.locator("a:has-text('Team B')").first.is_visible()
    assert page.locator("a:has-text('Team A')").count() == 0
    assert page.locator("nav a:has-text('Approvals')").count() == 0  # a member approves nothing
    membership = Membership.objects.get(user__username="grace")
    assert (membership.tenant, membership.role) == (team_b, Membership.Role.MEMBER)


def test_someone_without_a_mapped_group_sees_the_no_tenant_page(
    browser_page, live_server, provider, artifacts_dir
):
    page = browser_page
    sign_in_at_provider(page, live_server, "linus")
    page.wait_for_selector("h1:has-text('You are not in a tenant yet')")
    text = page.locator("[data-testid=no-tenant]").inner_text()
    assert "team-a-admins" in text and "Team A" in text and "Tenant admin" in text
    assert "team-b" in text and "Team B" in text
    assert page.locator("[data-testid=your-groups]").inner_text().strip() == "contractors"
    assert not Membership.objects.filter(user__username="linus").exists()
    page.screenshot(path=artifacts_dir / "no-tenant.png", full_page=True)


def test_signing_out_ends_the_session_at_the_provider_too(
    browser_page, live_server, provider, artifacts_dir
):
    page = browser_page
    sign_in_at_provider(page, live_server, "ada")
    # Only the portal's session gone: the provider's still signs her in without asking.
    page.context.clear_cookies(domain="localhost")
    sign_in_at_provider(page, live_server, "ada", asked=False)
    page.wait_for_selector("h1:has-text('Dashboard')")

    page.click("[data-testid=user-menu]")
    page.click("button:has-text('Sign out')")
    page.wait_for_selector("#idp-logout")  # the provider asks to confirm (RP-initiated logout)
    page.screenshot(path=artifacts_dir / "provider-logout.png", full_page=True)
    page.click("#idp-logout")
    page.wait_for_url(f"{live_server.url}/login/")
    page.goto(f"{live_server.url}/")
    page.wait_for_url(f"{live_server.url}/login/?next=/")

    page.click("[data-testid=sign-in-oidc]")
    page.wait_for_selector("#idp-username")  # the provider asks for credentials again


def test_a_break_glass_account_signs_in_with_its_password_only_while_allowed(
    browser_page, live_server, provider, settings, sign_in, alice, artifacts_dir
):
    UserFactory(username="breakglass", is_staff=True)
    page = browser_page
    page.goto(f"{live_server.url}/login/")
    assert not page.locator("#id_username").is_visible()  # folded away under "Break-glass"
    page.click("summary:has-text('Break-glass')")
    page.screenshot(path=artifacts_dir / "login-break-glass.png", full_page=True)
    page.fill("#id_username", "alice")  # a local account, but not a break-glass one
    page.fill("#id_password", "correct horse battery")
    page.click("[data-testid=sign-in-local]")
    page.wait_for_selector(".alert-danger")
    assert "correct username and password" in page.locator(".alert-danger").inner_text()

    page.fill("#id_username", "breakglass")
    page.fill("#id_password", "correct horse battery")
    page.click("[data-testid=sign-in-local]")
    page.wait_for_selector("h1:has-text('Dashboard')")
    assert page.locator("[data-testid=user-menu]").inner_text().strip().startswith("breakglass")

    settings.LOCAL_LOGIN = "off"
    page.reload()  # a break-glass session ends when break-glass sign-in is turned off
    page.wait_for_url(f"{live_server.url}/login/?next=/")
    assert page.locator("#id_username").count() == 0
    assert page.locator("[data-testid=sign-in-oidc]").is_visible()
