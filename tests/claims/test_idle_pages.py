"""The Idle claims list and the claim page's Idle section: who sees what, what they say, and
what they cost."""

from __future__ import annotations

import datetime

import pytest
from django.urls import reverse
from django.utils import timezone

from claims.usage.idle import idle_claim_count, sweep_idle_claims
from portal.models import IdlePolicy
from tests.claims.idle_helpers import TEAM_A_CLAIM, set_consumers

HOUR = datetime.timedelta(hours=1)
LIST = "/claims/usage/idle/"
CLAIM_PAGE = "/claims/gpu-test1/pod1-gpu-nscrq/"


@pytest.fixture
def idle(team_a, live):
    """team-a's claim (gpu-test1) and a claim of no tenant (gpu-test3) are idle."""
    set_consumers(live, TEAM_A_CLAIM, [])
    set_consumers(live, ("gpu-test3", "single-gpu"), [])
    now = timezone.now()
    sweep_idle_claims(now=now - 3 * HOUR)
    sweep_idle_claims(now=now)
    return now


def names(response) -> list[str]:
    """The claims on the page shown."""
    page = response.context["table"].page.object_list
    return [f"{row.record.namespace}/{row.record.name}" for row in page]


def test_the_url_is_named():
    assert reverse("idle-claim-list") == LIST


def test_a_tenant_member_sees_the_idle_claims_of_their_namespaces(idle, client_as, bob):
    response = client_as(bob).get(LIST)
    assert response.status_code == 200
    assert names(response) == ["gpu-test1/pod1-gpu-nscrq"]
    assert "no consumer since" in response.text
    assert idle_claim_count(bob) == 1


def test_the_dashboard_counts_the_idle_claims_one_may_see(idle, client_as, bob, carol):
    mine = client_as(bob).get("/").text
    theirs = client_as(carol).get("/").text
    assert ">1 idle</span>" in mine and 'href="/claims/usage/idle/"' in mine
    assert "none idle" in theirs


def test_a_portal_admin_sees_every_idle_claim(idle, client_as, root):
    response = client_as(root).get(LIST)
    assert names(response) == ["gpu-test1/pod1-gpu-nscrq", "gpu-test3/single-gpu"]
    assert idle_claim_count(root) == 2


def test_another_tenant_sees_none_of_them(idle, client_as, carol):
    response = client_as(carol).get(LIST)
    assert response.status_code == 200
    assert names(response) == []
    assert "No idle claims" in response.text
    assert idle_claim_count(carol) == 0


def test_anonymous_visitors_are_sent_to_log_in(idle, client):
    response = client.get(LIST)
    assert response.status_code == 302
    assert response["Location"].startswith("/accounts/login/") or "login" in response["Location"]


def test_the_list_filters_by_reason_and_pages(idle, client_as, root):
    client = client_as(root)
    assert names(client.get(LIST + "?reason=low_utilisation")) == []
    response = client.get(LIST + "?per_page=1&page=2")
    assert names(response) == ["gpu-test3/single-gpu"]


def test_the_list_costs_a_fixed_number_of_queries(
    idle, client_as, root, alice, django_assert_num_queries
):
    admin, member = client_as(root), client_as(alice)
    # session, user, count, the filter form's namespaces, the page (with its idleness rows)
    with django_assert_num_queries(5):
        admin.get(LIST)
    # a member's gate is a subquery of the same queries (plus the navigation's approvals check)
    with django_assert_num_queries(6):
        member.get(LIST)
    with django_assert_num_queries(4):  # the fragment has no filter form
        admin.get(LIST + "?reason=no_consumer", HTTP_HX_REQUEST="true")


def test_the_claim_page_says_why_it_is_idle_and_that_reclaim_is_off(idle, client_as, bob):
    response = client_as(bob).get(CLAIM_PAGE)
    assert 'data-testid="idle-badge"' in response.text
    assert "no consumer since" in response.text
    assert "Reclaim is off for this tenant" in response.text


def test_the_claim_page_says_when_reclaim_is_scheduled(idle, team_a, client_as, bob):
    IdlePolicy.objects.create(tenant=team_a, reclaim=True, grace_period=2 * HOUR)
    sweep_idle_claims(now=idle)
    response = client_as(bob).get(CLAIM_PAGE)
    assert "Reclaim scheduled at" in response.text
    assert "unless a pod reserves it by then" in response.text


def test_a_claim_in_use_has_no_idle_section(team_a, live, client_as, bob):
    sweep_idle_claims()
    response = client_as(bob).get(CLAIM_PAGE)
    assert 'data-testid="claim-idle"' not in response.text
    assert 'data-testid="idle-badge"' not in response.text
