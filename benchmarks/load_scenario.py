"""The locust scenario of ``benchmarks/load.py`` (run by it; not on its own).

Four kinds of users against the portal in production mode:

* **Browsers** sign in and read pages: the dashboard, device list pages (plain, filtered by
  state), device pages, the node list and node pages, the cluster's claims.
* **API clients** page through the device and node APIs by cursor.
* **Members** preview a claim on the New-claim form (the live preview), submit it over the API
  (an Idempotency-Key each), wait until it is applied, hold it a moment and release it. Now
  and then one asks for more than the tenant's approval rule allows and waits for approval.
* **Tenant admins** approve what waits for them.

``LOAD_CONFIG`` names a JSON file written by ``load.py``: the accounts (username, password,
token) per role, device page paths and node names to pick from, and ``LOAD_RECORD``, a JSON
Lines file that gets one line per response (wall-clock time, request name, status, time in
ms, and the request id a submission was answered with), from which ``load.py`` computes every
figure.
"""

from __future__ import annotations

import json
import os
import random
import threading
import time
import uuid
from typing import Any

from locust import HttpUser, between, events, task
from locust.exception import StopUser

CONFIG: dict[str, Any] = json.loads(open(os.environ["LOAD_CONFIG"]).read())  # noqa: SIM115
_record = open(CONFIG["record"], "a", buffering=1)  # noqa: SIM115 - one file for the run
_record_lock = threading.Lock()
_accounts: dict[str, list[dict[str, str]]] = {
    role: list(a) for role, a in CONFIG["accounts"].items()
}


def _note(line: dict[str, Any]) -> None:
    with _record_lock:
        _record.write(json.dumps({"t": time.time(), **line}) + "\n")


@events.request.add_listener
def _write(request_type, name, response_time, response_length, response, exception, **kw):  # noqa: ANN001
    status = getattr(response, "status_code", 0) or 0
    line: dict[str, Any] = {"name": name, "status": status, "ms": round(response_time, 1)}
    if exception is not None and not status:
        line["error"] = type(exception).__name__
    _note(line)


def _account(role: str) -> dict[str, str]:
    """Each locust user takes an account of its role, round robin."""
    accounts = _accounts[role]
    account = accounts.pop(0)
    accounts.append(account)
    return account


class SignedIn(HttpUser):
    abstract = True
    role = "browser"

    def on_start(self) -> None:
        self.account = _account(self.role)
        self.client.get("/login/", name="page: sign-in")
        self._plain_http()
        response = self.client.post(
            "/login/",
            {
                "username": self.account["username"],
                "password": self.account["password"],
                "csrfmiddlewaretoken": self.client.cookies.get("csrftoken", ""),
            },
            headers={"Referer": f"{self.host}/login/"},
            name="page: sign-in",
            allow_redirects=False,
        )
        self._plain_http()
        if response.status_code != 302:  # signed in: redirected to the dashboard
            raise StopUser

    def _plain_http(self) -> None:
        """Production cookies are Secure and the load runs plain HTTP on loopback: send them
        anyway (cookies are set only at sign-in here)."""
        for cookie in self.client.cookies:
            cookie.secure = False

    def api(self, method: str, path: str, name: str, **kwargs: Any):
        headers = {"Authorization": f"Bearer {self.account['token']}", **kwargs.pop("headers", {})}
        return self.client.request(method, f"/api/v1/{path}", name=name, headers=headers, **kwargs)


class Browser(SignedIn):
    weight = 5
    wait_time = between(1, 3)

    @task(2)
    def dashboard(self) -> None:
        self.client.get("/", name="page: dashboard")

    @task(3)
    def device_list(self) -> None:
        page = random.randint(1, CONFIG["device_pages"])
        self.client.get(f"/devices/?page={page}", name="page: device list")

    @task(2)
    def free_devices(self) -> None:
        self.client.get("/devices/?state=free", name="page: device list (free)")

    @task(3)
    def device(self) -> None:
        self.client.get(random.choice(CONFIG["device_paths"]), name="page: device")

    @task(1)
    def node_list(self) -> None:
        page = random.randint(1, CONFIG["node_pages"])
        self.client.get(f"/nodes/?page={page}", name="page: node list")

    @task(2)
    def node(self) -> None:
        self.client.get(f"/nodes/{random.choice(CONFIG['nodes'])}/", name="page: node")

    @task(1)
    def claims(self) -> None:
        self.client.get("/claims/", name="page: claims")


class ApiClient(SignedIn):
    weight = 2
    role = "api"
    wait_time = between(1, 2)

    def on_start(self) -> None:  # tokens only
        self.account = _account(self.role)

    @task(3)
    def devices(self) -> None:
        response = self.api("GET", "devices/?limit=100", "api: devices (first page)")
        for _ in range(3):
            cursor = (response.json() or {}).get("next_cursor") if response.ok else None
            if not cursor:
                return
            response = self.api(
                "GET", f"devices/?limit=100&cursor={cursor}", "api: devices (next page)"
            )

    @task(1)
    def nodes(self) -> None:
        self.api("GET", "nodes/?limit=100", "api: nodes")


class Member(SignedIn):
    weight = 3
    role = "member"
    wait_time = between(2, 5)

    @task
    def claim_cycle(self) -> None:
        big = random.random() < 0.1
        count = 5 if big else random.choice((1, 1, 2))
        name = f"load-{uuid.uuid4().hex[:10]}"
        self.client.get(
            "/claims/requests/preview/",
            params={
                "namespace": self.account["namespace"],
                "name": name,
                "device_class": "gpu.nvidia.com",
                "count": str(count),
                "lease": "1h",
            },
            headers={"HX-Request": "true"},
            name="page: claim preview",
        )
        body = {
            "namespace": self.account["namespace"],
            "name": name,
            "device_class": "gpu.nvidia.com",
            "count": count,
            "lease": "PT1H",
        }
        response = self.api(
            "POST",
            "claim-requests/",
            "api: submit",
            json=body,
            headers={"Idempotency-Key": name},
        )
        if response.status_code not in (200, 201, 202):
            return  # over quota (409) and the like: counted, nothing to follow
        request_id = response.json()["id"]
        _note({"submitted": request_id, "status": response.status_code})  # for "nothing lost"
        state = self._wait(request_id, {"applied", "in_use", "failed", "denied", "expired"}, 90)
        if state in ("applied", "in_use"):
            time.sleep(random.uniform(2, 6))
        if state not in ("failed", "denied", "expired", "released", "withdrawn"):
            self.api("POST", f"claim-requests/{request_id}/release/", "api: release", json={})
            self._wait(request_id, {"released", "withdrawn", "expired", "failed"}, 90)

    def _wait(self, request_id: str, states: set[str], seconds: float) -> str:
        deadline = time.monotonic() + seconds
        state = ""
        while time.monotonic() < deadline:
            response = self.api("GET", f"claim-requests/{request_id}/", "api: request")
            if response.ok:
                state = response.json()["state"]
                if state in states:
                    return state
            time.sleep(1)
        return state


class TenantAdmin(SignedIn):
    weight = 1
    role = "admin"
    wait_time = between(3, 6)

    def on_start(self) -> None:
        self.account = _account(self.role)

    @task
    def approve(self) -> None:
        response = self.api(
            "GET", "claim-requests/?state=pending_approval&limit=20", "api: approvals"
        )
        if not response.ok:
            return
        for item in (response.json() or {}).get("results", []):
            self.api(
                "POST",
                f"claim-requests/{item['id']}/approve/",
                "api: approve",
                json={"comment": "load test"},
            )
