"""One Idempotency-Key, many simultaneous requests (PostgreSQL, the API in threads): the same
body is answered with the first request every time (201 once, then 200 with the same request),
another body with 422 ``idempotency_key_reused``, never a 400 about a claim that does not
exist. Measured before: 20 requests with one key and body got 1 x 201, 4 x 200 and 15 x 400
"A claim named ... already exists"; with different bodies, 400s naming claims nobody made."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

import pytest
from django.db import connection
from rest_framework.test import APIClient

from claims.models import ClaimRequest
from kube.kinds import Kind
from portal.models import Quota
from tests.factories import TenantFactory, TenantNamespaceFactory

pytestmark = pytest.mark.django_db(transaction=True)
REQUESTS = "/api/v1/claim-requests/"
KEY = "retry-me-7f3c"
PARALLEL = 20


@pytest.fixture
def two_tenants(live, bob, team_a):
    """bob in team-a (gpu-test1) and in Race (namespace race, in the cluster too)."""
    _, cluster, resync = live
    cluster.create(Kind.NAMESPACES, {"metadata": {"name": "race"}})
    resync()
    race = TenantFactory(name="Race", slug="race")
    TenantNamespaceFactory(tenant=race, name="race")
    race.memberships.create(user=bob, role="member")
    Quota.objects.create(tenant=race, device_class_name="gpu.nvidia.com", max_devices=8)
    return race


def _post_all(user, bodies: list[dict[str, Any]]) -> list[tuple[int, dict[str, Any]]]:
    """POSTs every body at once, one thread (and client, and connection) each, with KEY."""
    answers: list[tuple[int, dict[str, Any]]] = []
    barrier = threading.Barrier(len(bodies))
    lock = threading.Lock()

    def post(body: dict[str, Any]) -> None:
        client = APIClient()
        client.force_authenticate(user)
        barrier.wait()
        try:
            response = client.post(REQUESTS, body, format="json", headers={"Idempotency-Key": KEY})
            answer = (response.status_code, response.json())
        except Exception as error:  # noqa: BLE001  (a server error is an outcome to count)
            answer = (500, {"exception": repr(error)})
        finally:
            connection.close()
        with lock:
            answers.append(answer)

    threads = [threading.Thread(target=post, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return answers


def _claim(namespace: str, name: str) -> dict[str, Any]:
    return {"namespace": namespace, "name": name, "device_class": "gpu.nvidia.com", "count": 1}


def test_the_same_body_is_answered_with_the_first_request_every_time(postgres, two_tenants, bob):
    answers = _post_all(bob, [_claim("race", "train")] * PARALLEL)
    assert Counter(status for status, _ in answers) == {201: 1, 200: PARALLEL - 1}, answers
    first = next(body for status, body in answers if status == 201)
    assert all(body["id"] == first["id"] for _, body in answers)
    assert all(body["name"] == "train" for _, body in answers)
    assert ClaimRequest.objects.count() == 1


def test_other_bodies_are_told_the_key_was_used_not_that_their_claim_exists(
    postgres, two_tenants, bob
):
    answers = _post_all(bob, [_claim("race", f"train-{i}") for i in range(PARALLEL)])
    assert Counter(status for status, _ in answers) == {201: 1, 422: PARALLEL - 1}, answers
    codes = {body["error"]["code"] for status, body in answers if status == 422}
    assert codes == {"idempotency_key_reused"}
    assert ClaimRequest.objects.count() == 1


def test_the_key_holds_across_tenants_whose_locks_do_not_meet(postgres, two_tenants, bob):
    """Half the bodies in team-a, half in Race: no tenant lock orders them, the key does."""
    bodies = [
        _claim("race" if i % 2 else "gpu-test1", "train" if i < 2 else f"train-{i}")
        for i in range(PARALLEL)
    ]
    answers = _post_all(bob, bodies)
    statuses = Counter(status for status, _ in answers)
    assert statuses[201] == 1, answers
    assert statuses[201] + statuses[200] + statuses[422] == PARALLEL, answers
    winner = ClaimRequest.objects.get()
    for status, body in answers:
        if status == 200:
            assert body["id"] == str(winner.pk)
        elif status == 422:
            assert body["error"]["code"] == "idempotency_key_reused"
