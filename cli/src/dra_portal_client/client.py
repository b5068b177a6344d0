"""A typed client for the DRA Portal REST API (``/api/v1/``), over httpx.

Every call answers the API's JSON (typed in :mod:`dra_portal_client.models`) or raises one of
:mod:`dra_portal_client.errors`. Answers 429 and 503 are retried after the ``Retry-After`` they
carry (bounded); a create carries an ``Idempotency-Key`` (generated when the caller gives none)
that its retries reuse, so a retried submission never makes two requests::

    from dra_portal_client import PortalClient

    with PortalClient("https://portal.example.com", token="drap_...") as portal:
        request = portal.submit_claim(
            {"namespace": "team-a-ci", "name": "ci-run-42", "device_class": "gpu.nvidia.com",
             "count": 2}
        )
        request = portal.wait_for_claim(request["id"], timeout=600)
"""

from __future__ import annotations

import email.utils
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from typing import Any, cast
from urllib.parse import quote

import httpx

from dra_portal_client.errors import ERRORS_BY_STATUS, ApiError, ConnectionFailed, NotFound
from dra_portal_client.models import (
    TERMINAL_STATES,
    ClaimRequest,
    ConfigurationOutcome,
    CurrentUser,
    Device,
    DeviceClass,
    FitReport,
    Node,
    Page,
    WhyPending,
)

__all__ = ["PortalClient", "USER_AGENT"]

USER_AGENT = "dra-portal-cli/0.1"
MAX_RETRY_WAIT = 30.0  # seconds: a Retry-After longer than this is waited this long
SETTLED_STATES = frozenset({"applied", "in_use"})


def _retry_after(response: httpx.Response, attempt: int) -> float:
    header = response.headers.get("Retry-After", "")
    if header.isdigit():
        return min(float(header), MAX_RETRY_WAIT)
    if header:
        try:
            moment = email.utils.parsedate_to_datetime(header)
        except (TypeError, ValueError):
            pass
        else:
            return max(0.0, min(moment.timestamp() - time.time(), MAX_RETRY_WAIT))
    return min(2.0**attempt, MAX_RETRY_WAIT)


class PortalClient:
    """One portal, one token. ``retries`` bounds the waits on 429/503 and on a connection
    that fails before any answer; ``sleep`` is replaceable (tests)."""

    def __init__(
        self,
        server: str,
        token: str | None = None,
        *,
        timeout: float = 30.0,
        retries: int = 4,
        verify: bool | str = True,
        sleep: Callable[[float], None] = time.sleep,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.server = server.rstrip("/")
        self.retries = retries
        self._sleep = sleep
        headers = {"Accept": "application/json", "User-Agent": USER_AGENT}
        if token:
            headers["Authorization"] = f"Bearer {token}"
        self._http = httpx.Client(
            base_url=f"{self.server}/api/v1/",
            headers=headers,
            timeout=timeout,
            verify=verify,
            transport=transport,
        )

    def __enter__(self) -> PortalClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._http.close()

    # --- transport -----------------------------------------------------------------------------

    def request(
        self,
        method: str,
        path: str,
        *,
        params: Mapping[str, Any] | None = None,
        json: Any = None,
        headers: Mapping[str, str] | None = None,
    ) -> Any:
        """One call, retried as the class says; answers the decoded JSON (None for 204)."""
        cleaned = {k: v for k, v in (params or {}).items() if v is not None and v != ""}
        attempt = 0
        while True:
            try:
                # No params at all (not {}) keeps the query of a ``next`` link.
                response = self._http.request(
                    method, path, params=cleaned or None, json=json, headers=headers
                )
            except httpx.TransportError as error:
                if attempt < min(self.retries, 2):
                    self._sleep(0.5 * 2**attempt)
                    attempt += 1
                    continue
                raise ConnectionFailed(
                    f"Cannot reach {self.server}: {error or type(error).__name__}."
                ) from error
            if response.status_code in (429, 503) and attempt < self.retries:
                self._sleep(_retry_after(response, attempt))
                attempt += 1
                continue
            return self._decode(response)

    def _decode(self, response: httpx.Response) -> Any:
        if response.status_code == 204:
            return None
        kind = response.headers.get("Content-Type", "")
        body: Any = None
        if "json" in kind:
            try:
                body = response.json()
            except ValueError:
                body = None
        if response.is_success:
            if body is None:
                raise ConnectionFailed(
                    f"{self.server} did not answer as a DRA Portal API (HTTP "
                    f"{response.status_code}, {kind or 'no content type'}): is the server URL "
                    "right?"
                )
            return body
        error = body.get("error") if isinstance(body, dict) else None
        if not isinstance(error, dict):
            if response.status_code == 404:
                raise ConnectionFailed(
                    f"{self.server} has no DRA Portal API at {response.request.url.path}: is the "
                    "server URL right?"
                )
            raise ApiError(
                response.status_code,
                "error",
                f"HTTP {response.status_code} from {self.server} "
                f"({response.reason_phrase or 'error'}).",
            )
        kind_of_error = ERRORS_BY_STATUS.get(response.status_code, ApiError)
        message = str(error.get("message", ""))
        if response.status_code == 404 and message in ("", "Not found."):
            path = response.request.url.path.removeprefix("/api/v1/").strip("/")
            message = f"Not found: {path} (or not yours to see)."
        raise kind_of_error(
            int(error.get("status", response.status_code)),
            str(error.get("code", "error")),
            message,
            error.get("fields") if isinstance(error.get("fields"), dict) else None,
            error.get("details") if isinstance(error.get("details"), dict) else None,
        )

    def pages(self, path: str, params: Mapping[str, Any] | None = None) -> Iterator[Page]:
        """Every page of a list, following ``next`` (cursors where the list has them)."""
        page = cast(Page, self.request("GET", path, params=params))
        yield page
        while page.get("next"):
            next_url = str(page["next"])
            relative = next_url.split("/api/v1/", 1)[1] if "/api/v1/" in next_url else next_url
            page = cast(Page, self.request("GET", relative))
            yield page

    def items(
        self, path: str, params: Mapping[str, Any] | None = None, *, limit: int | None = None
    ) -> tuple[list[dict[str, Any]], int]:
        """Up to ``limit`` items of a list (all of them when None) and the list's count."""
        wanted = dict(params or {})
        if limit is not None:
            wanted["limit"] = min(limit, 1000)
        else:
            wanted.setdefault("limit", 1000)
        found: list[dict[str, Any]] = []
        count = 0
        for page in self.pages(path, wanted):
            count = int(page.get("count", 0))
            found.extend(page.get("results", []))
            if limit is not None and len(found) >= limit:
                return found[:limit], count
        return found, count

    # --- who -----------------------------------------------------------------------------------

    def me(self) -> CurrentUser:
        return cast(CurrentUser, self.request("GET", "me/"))

    # --- the cluster ---------------------------------------------------------------------------

    def devices(self, *, limit: int | None = None, **filters: Any) -> tuple[list[Device], int]:
        found, count = self.items("devices/", filters, limit=limit)
        return cast(list[Device], found), count

    def device(self, key: str) -> Device:
        """``key`` is ``driver/pool/device``."""
        return cast(Device, self.request("GET", f"devices/{quote(key, safe='/')}/"))

    def nodes(self, *, limit: int | None = None, **filters: Any) -> tuple[list[Node], int]:
        found, count = self.items("nodes/", filters, limit=limit)
        return cast(list[Node], found), count

    def node(self, name: str) -> Node:
        return cast(Node, self.request("GET", f"nodes/{quote(name, safe='')}/"))

    def device_classes(
        self, *, limit: int | None = None, **filters: Any
    ) -> tuple[list[DeviceClass], int]:
        found, count = self.items("device-classes/", filters, limit=limit)
        return cast(list[DeviceClass], found), count

    def resource_claim(self, namespace: str, name: str) -> dict[str, Any]:
        return cast(dict[str, Any], self.request("GET", f"resource-claims/{namespace}/{name}/"))

    def why_pending(self, namespace: str, name: str) -> WhyPending:
        return cast(WhyPending, self.request("GET", f"resource-claims/{namespace}/{name}/why/"))

    # --- claim requests ------------------------------------------------------------------------

    def claim_requests(
        self, *, limit: int | None = None, **filters: Any
    ) -> tuple[list[ClaimRequest], int]:
        found, count = self.items("claim-requests/", filters, limit=limit)
        return cast(list[ClaimRequest], found), count

    def claim_request(self, request_id: str) -> ClaimRequest:
        return cast(ClaimRequest, self.request("GET", f"claim-requests/{request_id}/"))

    def find_claim_request(self, name: str, namespace: str | None = None) -> ClaimRequest:
        """A request by id, or the newest one named ``name`` (in ``namespace``)."""
        try:
            uuid.UUID(name)
        except ValueError:
            pass
        else:
            return self.claim_request(name)
        found, _ = self.claim_requests(
            q=name, namespace=namespace, ordering="-created_at", limit=100
        )
        named = [r for r in found if r.get("name") == name]
        if not named:
            where = f" in namespace {namespace}" if namespace else ""
            raise NotFound(
                404, "not_found", f"No claim request named {name}{where} that you can see."
            )
        return named[0]

    def submit_claim(self, claim: Mapping[str, Any], *, idempotency_key: str = "") -> ClaimRequest:
        """Submit a request (the New-claim page's input). The key makes retries safe."""
        key = idempotency_key or str(uuid.uuid4())
        return cast(
            ClaimRequest,
            self.request(
                "POST", "claim-requests/", json=dict(claim), headers={"Idempotency-Key": key}
            ),
        )

    def would_it_fit(self, claim: Mapping[str, Any]) -> FitReport:
        return cast(FitReport, self.request("POST", "claim-requests/would-it-fit/", json=claim))

    def release(self, request_id: str, *, force: bool = False) -> ClaimRequest:
        body = {"force": True} if force else {}
        path = f"claim-requests/{request_id}/release/"
        return cast(ClaimRequest, self.request("POST", path, json=body))

    def renew(self, request_id: str, *, lease: str | None = None) -> ClaimRequest:
        body = {"lease": lease} if lease else {}
        return cast(
            ClaimRequest, self.request("POST", f"claim-requests/{request_id}/renew/", json=body)
        )

    def approve(self, request_id: str, *, comment: str = "") -> ClaimRequest:
        path = f"claim-requests/{request_id}/approve/"
        return cast(ClaimRequest, self.request("POST", path, json={"comment": comment}))

    def deny(self, request_id: str, *, comment: str) -> ClaimRequest:
        path = f"claim-requests/{request_id}/deny/"
        return cast(ClaimRequest, self.request("POST", path, json={"comment": comment}))

    def wait_for_claim(
        self,
        request_id: str,
        *,
        timeout: float = 600.0,
        interval: float = 1.0,
        on_change: Callable[[ClaimRequest], None] | None = None,
    ) -> ClaimRequest:
        """Poll until the request is applied or in use, or has ended (failed, denied, ...);
        answers it as it was last seen (still on its way when ``timeout`` ran out)."""
        deadline = time.monotonic() + timeout
        last_state = None
        while True:
            request = self.claim_request(request_id)
            if request.get("state") != last_state:
                last_state = request.get("state")
                if on_change is not None:
                    on_change(request)
            if last_state in SETTLED_STATES or last_state in TERMINAL_STATES:
                return request
            if time.monotonic() >= deadline:
                return request
            self._sleep(min(interval, max(0.0, deadline - time.monotonic())))

    # --- tenancy -------------------------------------------------------------------------------

    def tenant_usage(self, slug: str) -> dict[str, Any]:
        return cast(dict[str, Any], self.request("GET", f"tenants/{slug}/usage/"))

    def quotas(self, *, tenant: str | None = None) -> list[dict[str, Any]]:
        return self.items("quotas/", {"tenant": tenant})[0]

    def allocation_hours(self, **params: Any) -> dict[str, Any]:
        return cast(dict[str, Any], self.request("GET", "reports/allocation-hours/", params=params))

    def audit_events(
        self, *, limit: int | None = None, **filters: Any
    ) -> tuple[list[dict[str, Any]], int]:
        return self.items("audit-events/", filters, limit=limit)

    def configuration(self) -> dict[str, Any]:
        return cast(dict[str, Any], self.request("GET", "configuration/"))

    def apply_configuration(
        self, document: Mapping[str, Any], *, prune: bool = False, dry_run: bool = False
    ) -> ConfigurationOutcome:
        body = {"document": dict(document), "prune": prune, "dry_run": dry_run}
        return cast(ConfigurationOutcome, self.request("POST", "configuration/", json=body))
