"""The backstop page of a tenant: who sees it, who repairs, who switches it, and what it shows."""

from __future__ import annotations

import pytest

from kube.kinds import Kind
from mirror.backstop import QUOTA_NAME
from mirror.models import BackstopStatus
from portal.models import AuditEvent

GPUS = "gpu.nvidia.com.deviceclass.resource.k8s.io/devices"
PAGE = "/tenants/team-a/backstop/"
State = BackstopStatus.State


@pytest.fixture
def cluster(live):
    _, client, _ = live
    client.create(Kind.NAMESPACES, {"metadata": {"name": "team-a-dev"}})
    return client


@pytest.fixture
def switched_on(team_a, root, client_as, cluster, django_capture_on_commit_callbacks):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(root).post(f"{PAGE}switch/", {"enabled": "on"})
    assert response.status_code == 302
    team_a.refresh_from_db()
    return team_a


def test_anonymous_visitors_are_sent_to_sign_in(client, team_a):
    assert client.get(PAGE)["Location"].startswith("/login/")
    assert client.post(f"{PAGE}repair/")["Location"].startswith("/login/")


def test_another_tenant_gets_404_everywhere(client_as, carol, team_a):
    client = client_as(carol)
    assert client.get(PAGE).status_code == 404
    for action in ("check", "repair", "switch"):
        assert client.post(f"{PAGE}{action}/").status_code == 404


def test_it_explains_the_backstop_while_it_is_off(client_as, alice, team_a):
    response = client_as(alice).get(PAGE)
    content = response.content.decode()
    assert response.status_code == 200
    assert "The backstop is off" in content
    assert "kubectl or an operator cannot create claims beyond the quota" in content
    assert 'data-testid="switch-on"' not in content  # portal admins only


def test_a_portal_admin_switches_it_on_and_the_page_shows_each_namespace(
    switched_on, client_as, root, cluster
):
    assert cluster.get(Kind.RESOURCE_QUOTAS, QUOTA_NAME, "gpu-test1")["spec"]["hard"] == {GPUS: "8"}
    content = client_as(root).get(PAGE).content.decode()
    assert 'data-namespace="gpu-test1"' in content and 'data-namespace="team-a-dev"' in content
    assert 'data-state="in_sync"' in content and GPUS in content
    assert 'data-testid="switch-off"' in content


def test_the_teammate_reads_it_but_may_not_repair_check_or_switch(switched_on, client_as, bob):
    client = client_as(bob)
    content = client.get(PAGE).content.decode()
    assert 'data-state="in_sync"' in content and 'data-testid="repair"' not in content
    assert client.post(f"{PAGE}repair/").status_code == 403
    assert client.post(f"{PAGE}check/").status_code == 403
    assert client.post(f"{PAGE}switch/", {"enabled": "off"}).status_code == 403


def test_the_tenant_admin_may_not_switch_it(switched_on, client_as, alice):
    assert client_as(alice).post(f"{PAGE}switch/", {"enabled": "off"}).status_code == 403
    switched_on.refresh_from_db()
    assert switched_on.resource_quota_backstop


def test_check_now_shows_drift_and_repair_fixes_it(switched_on, client_as, alice, cluster):
    edited = cluster.get(Kind.RESOURCE_QUOTAS, QUOTA_NAME, "gpu-test1")
    edited["spec"]["hard"] = {GPUS: "80"}
    cluster.replace(Kind.RESOURCE_QUOTAS, edited)
    client = client_as(alice)

    checked = client.post(f"{PAGE}check/", follow=True).content.decode()
    assert "1 need attention" in checked
    assert 'data-state="drifted"' in checked and "edited" in checked and ">80<" in checked

    repaired = client.post(f"{PAGE}repair/", follow=True).content.decode()
    assert "as the portal wants it in 2 namespaces" in repaired
    assert 'data-state="drifted"' not in repaired
    assert cluster.get(Kind.RESOURCE_QUOTAS, QUOTA_NAME, "gpu-test1")["spec"]["hard"] == {GPUS: "8"}
    assert AuditEvent.objects.filter(
        action=AuditEvent.Action.BACKSTOP_REPAIRED, actor=alice
    ).exists()


def test_actions_answer_only_to_post(switched_on, client_as, alice):
    assert client_as(alice).get(f"{PAGE}repair/").status_code == 405


def test_switching_it_off_removes_the_quotas_and_says_so(
    switched_on, client_as, root, cluster, django_capture_on_commit_callbacks
):
    with django_capture_on_commit_callbacks(execute=True):
        response = client_as(root).post(f"{PAGE}switch/", {"enabled": "off"}, follow=True)
    content = response.content.decode()
    assert "being removed" in content and "The backstop is off" in content
    assert (
        cluster.list_all(Kind.RESOURCE_QUOTAS, label_selector="dra-portal.io/tenant=team-a")[0]
        == []
    )
