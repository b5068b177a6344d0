"""What the portal does with a provider's verified claims: the user (created on first sign-in,
found by iss + sub after), their profile, admin flags and memberships."""

from __future__ import annotations

import pytest
from django.contrib.auth import get_user_model

from portal.models import AuditEvent, ExternalIdentity, Membership
from portal.services.identities import SignInRefused, sign_in_with_provider
from portal.sign_in.groups import parse_group_map
from tests.factories import UserFactory

pytestmark = pytest.mark.django_db

ISSUER = "https://idp.example/realms/main"


@pytest.fixture(autouse=True)
def _mapping(settings, team_a, team_b):
    settings.OIDC_GROUP_MAP = parse_group_map(
        "team-a-admins=team-a:tenant_admin, team-b=team-b, gone=no-such-tenant"
    )
    settings.OIDC_ADMIN_GROUPS = []
    settings.OIDC_ADMIN_SUPERUSER = False
    settings.OIDC_LINK_EXISTING_USERS = False
    settings.LOCAL_LOGIN_USERS = ["breakglass"]


def claims(sub="0001", username="dana", groups=(), **extra):
    return {"sub": sub, "preferred_username": username, "groups": list(groups), **extra}


def test_the_first_sign_in_creates_the_user_in_the_tenants_of_their_groups(team_a):
    user = sign_in_with_provider(
        issuer=ISSUER,
        claims=claims(
            groups=["team-a-admins", "gone"], email="dana@example.org", given_name="Dana"
        ),
    )
    assert (user.username, user.email, user.first_name) == ("dana", "dana@example.org", "Dana")
    assert not user.has_usable_password()
    membership = Membership.objects.get(user=user)
    assert (membership.tenant, membership.role) == (team_a, Membership.Role.TENANT_ADMIN)
    identity = user.external_identity
    assert (identity.issuer, identity.subject, identity.groups) == (
        ISSUER,
        "0001",
        ["gone", "team-a-admins"],
    )


def test_later_sign_ins_find_the_user_by_subject_and_follow_their_groups(team_b):
    first = sign_in_with_provider(issuer=ISSUER, claims=claims(groups=["team-a-admins"]))
    again = sign_in_with_provider(
        issuer=ISSUER, claims=claims(username="dana.renamed", groups=["team-b"])
    )
    assert again.pk == first.pk and again.username == "dana"
    assert [(m.tenant, m.role) for m in Membership.objects.filter(user=again)] == [
        (team_b, Membership.Role.MEMBER)
    ]


def test_the_same_subject_at_another_provider_is_another_person():
    first = sign_in_with_provider(issuer=ISSUER, claims=claims(username="dana"))
    other = sign_in_with_provider(issuer="https://other.example", claims=claims(username="dan"))
    assert first.pk != other.pk


def test_a_local_account_with_the_same_username_is_not_taken_over(settings):
    UserFactory(username="dana", is_staff=True)
    with pytest.raises(SignInRefused, match="A local portal account named dana already exists"):
        sign_in_with_provider(issuer=ISSUER, claims=claims())
    assert not ExternalIdentity.objects.exists()

    settings.OIDC_LINK_EXISTING_USERS = True
    user = sign_in_with_provider(issuer=ISSUER, claims=claims())
    assert user.external_identity.subject == "0001"


def test_a_break_glass_account_is_never_linked(settings):
    settings.OIDC_LINK_EXISTING_USERS = True
    UserFactory(username="breakglass")
    with pytest.raises(SignInRefused, match="named breakglass already exists"):
        sign_in_with_provider(issuer=ISSUER, claims=claims(username="breakglass"))


def test_an_account_linked_to_another_subject_is_refused(settings):
    settings.OIDC_LINK_EXISTING_USERS = True
    sign_in_with_provider(issuer=ISSUER, claims=claims(sub="0001"))
    with pytest.raises(SignInRefused, match="already signs in with another account"):
        sign_in_with_provider(issuer=ISSUER, claims=claims(sub="0002"))


@pytest.mark.parametrize(
    ("given", "message"),
    [
        ({"preferred_username": None}, "sent no “preferred_username” claim"),
        ({"preferred_username": "dana lee"}, "cannot name a portal account"),
        ({"preferred_username": "d" * 151}, "cannot name a portal account"),
        ({"sub": ""}, "sent no subject"),
    ],
)
def test_a_person_the_portal_cannot_name_is_told_why(given, message):
    with pytest.raises(SignInRefused, match=message):
        sign_in_with_provider(issuer=ISSUER, claims={**claims(), **given})
    assert not get_user_model().objects.filter(username__startswith="d").exists()


def test_a_deactivated_user_is_refused():
    user = sign_in_with_provider(issuer=ISSUER, claims=claims())
    user.is_active = False
    user.save()
    with pytest.raises(SignInRefused, match="deactivated"):
        sign_in_with_provider(issuer=ISSUER, claims=claims())


def test_the_admin_group_makes_a_portal_admin_and_leaving_it_unmakes_one(settings):
    settings.OIDC_ADMIN_GROUPS = ["portal-admins"]
    user = sign_in_with_provider(issuer=ISSUER, claims=claims(groups=["portal-admins"]))
    assert (user.is_staff, user.is_superuser) == (True, False)
    settings.OIDC_ADMIN_SUPERUSER = True
    user = sign_in_with_provider(issuer=ISSUER, claims=claims(groups=["portal-admins"]))
    assert (user.is_staff, user.is_superuser) == (True, True)
    user = sign_in_with_provider(issuer=ISSUER, claims=claims(groups=["team-b"]))
    assert (user.is_staff, user.is_superuser) == (False, False)
    changes = AuditEvent.objects.filter(object_type="auth.User").order_by("pk")
    assert [event.after["is_staff"] for event in changes] == [True, True, False]


def test_without_admin_groups_the_portal_keeps_its_own_admin_flags():
    user = sign_in_with_provider(issuer=ISSUER, claims=claims())
    user.is_staff = True
    user.save()
    assert sign_in_with_provider(issuer=ISSUER, claims=claims()).is_staff


def test_a_portal_admin_can_unlink_an_identity_and_it_is_audited(client_as, root):
    user = sign_in_with_provider(issuer=ISSUER, claims=claims())
    identity = user.external_identity
    response = client_as(root).post(
        f"/admin/portal/externalidentity/{identity.pk}/delete/", {"post": "yes"}
    )
    assert response.status_code == 302
    assert not ExternalIdentity.objects.exists()
    event = AuditEvent.objects.get(object_type="portal.ExternalIdentity")
    assert event.before == {"user": "dana", "issuer": ISSUER, "subject": "0001"}
    with pytest.raises(SignInRefused, match="named dana already exists"):
        sign_in_with_provider(issuer=ISSUER, claims=claims())
