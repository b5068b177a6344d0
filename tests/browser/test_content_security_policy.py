"""Every key page, as a portal admin and a tenant admin, in a real browser under the
portal's own Content-Security-Policy: the browser reports no violation (a
``securitypolicyviolation`` event or a "Refused to ..." console message), no htmx error, no
Permissions-Policy complaint and no script error; each page's document came with the strict
policy. Screenshots of the main pages are kept (``test-artifacts/csp-*.png``)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from claims.models import ClaimRequest
from demo.data import seed_governance
from devices.models import Device, TelemetrySource
from devices.telemetry.ingest import ingest_source

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# Installed before any of the page's own scripts: the violations and htmx's error events of
# every document, reported to the test through the binding.
WATCH = """
(() => {
  const report = (kind, text) => window.portalReport(kind, location.pathname + ": " + text);
  document.addEventListener("securitypolicyviolation", (e) => report("csp",
    `${e.effectiveDirective} blocked ${e.blockedURI || "inline"} (${e.sourceFile}:` +
    `${e.lineNumber}) ${e.sample}`), true);
  for (const name of ["htmx:responseError", "htmx:sendError", "htmx:swapError",
      "htmx:evalDisallowedError", "htmx:syntax:error", "htmx:targetError",
      "htmx:onLoadError", "htmx:oobErrorNoTarget", "htmx:historyCacheError"]) {
    document.addEventListener(name, (e) => report("htmx", name), true);
  }
})();
"""
COMPLAINT = re.compile(r"Content.Security.Policy|Refused to|Permissions.Policy|htmx", re.I)
STRICT = ("default-src 'self'", "script-src 'self'", "style-src 'self'", "object-src 'none'")


@dataclass
class Watcher:
    """What the browser reported while the test browsed."""

    problems: list[str] = field(default_factory=list)

    def assert_none(self) -> None:
        assert not self.problems, "\n".join(dict.fromkeys(self.problems))

    def console(self, message) -> None:
        text = message.text
        if message.type in ("error", "warning") and COMPLAINT.search(text):
            self.problems.append(f"console {message.type}: {text}")
        elif message.type == "error" and not text.startswith("Failed to load resource"):
            self.problems.append(f"console error: {text}")  # 4xx documents are checked below


def watch(page) -> Watcher:
    watcher = Watcher()
    page.expose_function("portalReport", lambda kind, text: watcher.problems.append(text))
    page.add_init_script(WATCH)
    page.on("console", watcher.console)
    page.on("pageerror", lambda error: watcher.problems.append(f"script error: {error}"))
    return watcher


def visit(page, url: str, shot: Path | None = None) -> None:
    """Loads ``url``, checks its document carried the strict policy, lets htmx settle."""
    response = page.goto(url)
    assert response is not None and response.status < 500, f"{url}: {response and response.status}"
    policy = response.header_value("content-security-policy") or ""
    for directive in STRICT:
        assert directive in policy, f"{url}: no {directive!r} in {policy!r}"
    assert "unsafe" not in policy, policy
    if shot is not None:
        page.wait_for_load_state("networkidle")
        page.screenshot(path=shot, full_page=True)
    else:
        settle(page)


# Every element htmx is requesting for, swapping or settling: none left means the fragments
# that load with the page are in and their scripts ran (under the policy).
BUSY = "() => !document.querySelector('.htmx-request, .htmx-swapping, .htmx-settling')"


def settle(page) -> None:
    """The page's own resources loaded and htmx idle: quicker than "no network for 500 ms",
    which every page would pay."""
    page.wait_for_load_state("load")
    page.wait_for_function(BUSY)


def key_pages(request_pk: str, device: Device) -> dict[str, str]:
    """Name → path of the pages every persona visits."""
    return {
        "dashboard": "/",
        "devices": "/devices/?per_page=25",
        "nodes": "/nodes/",
        "node": "/nodes/dgx-h100-01/",
        "topology": "/nodes/dgx-a100-01/topology/",
        "device": device.get_absolute_url(),
        "device-classes": "/device-classes/",
        "device-class": "/device-classes/gpu.nvidia.com/",
        "my-claims": "/claims/requests/",
        "request": f"/claims/requests/{request_pk}/",
        "claims": "/claims/",
        "claim": "/claims/gpu-test1/pod1-gpu-nscrq/",
        "idle": "/claims/usage/idle/",
        "approvals": "/approvals/",
        "tenants": "/tenants/",
        "tenant": "/tenants/team-a/",
        "quotas": "/tenants/team-a/quotas/",
        "members": "/tenants/team-a/members/",
        "webhook": "/tenants/team-a/webhook/",
        "backstop": "/tenants/team-a/backstop/",
        "reports": "/reports/",
        "audit": "/audit/",
        "tokens": "/account/tokens/",
        "notifications": "/account/notifications/",
        "mirror": "/mirror/",
        "telemetry": "/telemetry/",
        "fragmentation": "/fragmentation/",
        "fragmentation-node": "/fragmentation/nodes/dgx-a100-01/",
        "sharing": "/sharing/",
        "not-found": "/devices/no.such/pool/device/",
    }


# Whose view of a page is kept as its screenshot.
SHOTS = {
    "alice": {
        *("dashboard", "devices", "node", "topology", "device", "my-claims", "request", "claim"),
        *("approvals", "tenant", "quotas", "reports", "sharing", "fragmentation"),
    },
    "admin": {"nodes", "device-classes", "audit", "mirror", "tokens", "tenants", "not-found"},
}


def test_every_key_page_satisfies_the_content_security_policy(
    browser_page, live_server, live, demo_seeded, artifacts_dir
):
    passwords = demo_seeded
    seed_governance()  # bob's pending request: the approvals queue and a request page
    ingest_source(TelemetrySource.objects.create(name="demo", kind="simulated"))  # charts
    request = ClaimRequest.objects.get(requested_by__username="bob")
    device = Device.objects.get(node_name="dgx-h100-01", name="gpu-0")
    pages = key_pages(str(request.pk), device)
    page = browser_page
    watcher = watch(page)
    base = live_server.url

    def sign_in(username: str) -> None:
        page.context.clear_cookies()
        visit(page, f"{base}/login/", artifacts_dir / "csp-login.png")
        page.fill("#id_username", username)
        page.fill("#id_password", passwords[username])
        page.click("button[type=submit]")
        page.wait_for_url(f"{base}/")

    # Every template renders for these two: a portal admin (every tenant, the admin's links)
    # and a tenant admin (the tenant-admin forms and the approvals queue); a member's and
    # another tenant's views use the same templates with less in them (bob types below).
    for persona in ("admin", "alice"):
        sign_in(persona)
        for name, path in pages.items():
            keep = name in SHOTS.get(persona, ())
            visit(page, base + path, artifacts_dir / f"csp-{name}.png" if keep else None)
    watcher.assert_none()

    # The pages where scripts do most, as bob: the New claim form's live preview, typed into
    # (htmx requests and swaps, the quota bars), and a chart's time range.
    sign_in("bob")
    visit(page, f"{base}/claims/requests/new/")
    page.select_option("select[name=namespace]", "gpu-test1")
    page.select_option("select[name=device_class]", "gpu.nvidia.com")
    page.wait_for_selector("[data-testid=preview-matching]")
    page.locator("textarea[name=selectors]").press_sequentially(
        'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"'
    )
    page.locator("input[name=name]").press_sequentially("csp-check", delay=50)
    page.wait_for_function(
        "t => document.querySelector('[data-testid=preview-yaml]')?.textContent.includes(t)",
        arg="name: csp-check",
    )
    page.wait_for_load_state("networkidle")
    page.screenshot(path=artifacts_dir / "csp-new-claim.png", full_page=True)
    # A chart's time range (boosted links that swap the chart in).
    visit(page, base + pages["device"])
    page.locator("nav[aria-label='Time range'] a", has_text="6 h").first.click()
    page.wait_for_selector("nav[aria-label='Time range'] a.active:has-text('6 h')")
    page.wait_for_load_state("networkidle")

    # As a portal admin: Django's admin and the API's documentation (Swagger UI) and its
    # browsable API.
    sign_in("admin")
    visit(page, f"{base}/admin/", artifacts_dir / "csp-admin.png")
    visit(page, f"{base}/admin/portal/tenant/")
    page.click("text=Team A")
    page.wait_for_load_state("networkidle")
    visit(page, f"{base}/api/docs/")
    page.locator(".opblock").first.wait_for()
    page.screenshot(path=artifacts_dir / "csp-api-docs.png", full_page=False)
    visit(page, f"{base}/api/v1/devices/?limit=2", artifacts_dir / "csp-browsable-api.png")

    watcher.assert_none()
