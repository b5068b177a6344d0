"""The README's "Run it" journey, sentence by sentence, on the demo's own data (the personas,
tenants, quotas, class policies and bob's pending request as ``make demo`` seeds them; the demo
cluster with its simulated scheduler), in a real browser. Each block quotes the sentence it
checks; a sentence that stops holding fails here."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from django.core import mail

from claims.models import ClaimRequest, ResourceClaim
from demo.data import H100_SELECTOR, seed_governance
from demo.scheduler import start_simulated_scheduler
from kube.kinds import Kind

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
README = Path(__file__).resolve().parents[2] / "README.md"


def readme_says(text: str) -> None:
    """The sentence this step checks is still the README's (whitespace aside)."""
    flat = " ".join(README.read_text().split())
    assert " ".join(text.split()) in flat, text


def eventually(check, seconds: float = 20.0) -> None:
    deadline = time.monotonic() + seconds
    while not check():
        assert time.monotonic() < deadline, "not reached in time"
        time.sleep(0.1)


def settle(page) -> None:
    """Let the New claim form's live preview settle: leaving a field fires one more preview
    (and the test database is one in-memory SQLite that locks whole tables)."""
    page.locator("h1").first.click()  # leave the field: its change event fires now
    page.wait_for_timeout(400)  # the preview's trigger delay (300 ms)
    page.wait_for_function("() => !document.querySelector('.htmx-request')")


def shot(page, artifacts_dir: Path, name: str) -> None:
    page.screenshot(path=artifacts_dir / f"readme-{name}.png", full_page=True)


@pytest.fixture
def simulated_scheduler(live):
    emulator, _, _ = live
    stop = threading.Event()
    thread = start_simulated_scheduler(emulator.url, stop)
    yield
    stop.set()
    thread.join(timeout=10)


def test_the_readme_journey_holds_sentence_by_sentence(
    browser_page, sign_in, live_server, live, demo_seeded, simulated_scheduler, artifacts_dir
):
    _, cluster, resync = live
    passwords = demo_seeded
    pending = seed_governance()  # what `make demo` submits once the classes are mirrored
    assert pending is not None
    page = browser_page

    # "Try a claim as bob: *New claim* → `gpu.nvidia.com` (reservation mode in the demo: the
    # portal allocates and holds the GPUs for the lease, which needs no approval unless you make
    # it longer than 3 days; the selector `...productName == "NVIDIA H100 80GB HBM3"` picks
    # H100s over the DGX A100's GPUs)"
    readme_says("Try a claim as bob: *New claim* → `gpu.nvidia.com` (reservation mode in the demo")
    readme_says(
        "the portal allocates and holds the GPUs for the lease, which needs no approval unless "
        "you make it longer than 3 days;"
    )
    readme_says(f"the selector `{H100_SELECTOR}` picks H100s over the DGX A100's GPUs)")
    sign_in(page, "bob", passwords["bob"])
    page.wait_for_url(f"{live_server.url}/")
    page.get_by_role("link", name="New claim").first.click()
    page.wait_for_url("**/claims/requests/new/")
    page.select_option("select[name=namespace]", "gpu-test1")
    page.fill("input[name=name]", "my-h100")
    page.select_option("select[name=device_class]", "gpu.nvidia.com")
    assert "gpu.nvidia.com · reservation" in page.locator("select[name=device_class]").inner_text()
    page.fill("textarea[name=selectors]", H100_SELECTOR)
    # The lease is in sight, and an empty one needs no approval in team-a.
    assert page.locator("[data-testid=lease-input]").is_visible()
    page.wait_for_function(
        "() => document.querySelector('[data-testid=lease-hint]')?.innerText.includes('Empty: 3d.')"
    )
    page.wait_for_function(
        "() => document.querySelector('[data-testid=preview-lease]')?.innerText"
        ".includes('no approval needed')"
    )
    assert page.locator("[data-testid=preview-approval]").count() == 0
    settle(page)
    assert "on dgx-h100-" in page.locator("[data-testid=preview-fit]").inner_text()
    shot(page, artifacts_dir, "new-claim")
    page.click("[data-testid=submit-claim]")
    page.wait_for_url(re.compile(r".*/claims/requests/[0-9a-f-]{36}/$"))
    mine = ClaimRequest.objects.get(name="my-h100")
    assert mine.state == ClaimRequest.State.APPLIED, mine.reason  # not "Needs approval"
    assert mine.mode == "reservation" and mine.node_name.startswith("dgx-h100-")
    assert page.locator("[data-testid=allocated-device]").count() == 1
    assert "3d, until" in page.locator("main").inner_text()  # held for the lease

    # "or `mig.nvidia.com` (scheduler mode: the claim waits for a pod, which the simulated
    # scheduler places — e.g. `kubectl apply` a pod that references it)."
    readme_says(
        "or `mig.nvidia.com` (scheduler mode: the claim waits for a pod, which the simulated "
        "scheduler places — e.g. `kubectl apply` a pod that references it)"
    )
    page.goto(f"{live_server.url}/claims/requests/new/")
    page.select_option("select[name=namespace]", "gpu-test1")
    page.fill("input[name=name]", "my-mig")
    page.select_option("select[name=device_class]", "mig.nvidia.com")
    page.wait_for_function(
        "() => "
        "document.querySelector('[data-testid=preview-fit]')?.innerText.includes('Scheduler mode')"
    )
    settle(page)
    page.click("[data-testid=submit-claim]")
    page.wait_for_url(re.compile(r".*/claims/requests/[0-9a-f-]{36}/$"))
    mig = ClaimRequest.objects.get(name="my-mig")
    assert mig.mode == "scheduler" and mig.state == ClaimRequest.State.APPLIED, mig.reason
    assert (
        "the kube-scheduler allocates the claim when the first pod"
        in page.locator("main").inner_text()
    )
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "my-mig", "gpu-test1")
    assert not (claim.get("status") or {}).get("allocation")  # it waits for a pod
    cluster.create(  # what `kubectl apply` of a pod that references it does
        Kind.PODS,
        {
            "metadata": {"name": "bob-mig-pod", "namespace": "gpu-test1"},
            "spec": {
                "containers": [{"name": "main", "image": "ubuntu:24.04"}],
                "resourceClaims": [{"name": "mig", "resourceClaimName": "my-mig"}],
            },
        },
    )
    eventually(
        lambda: (
            (cluster.get(Kind.PODS, "bob-mig-pod", "gpu-test1").get("status") or {}).get("phase")
            == "Running"
        )
    )
    claim = cluster.get(Kind.RESOURCE_CLAIMS, "my-mig", "gpu-test1")
    assert claim["status"]["allocation"]["devices"]["results"]
    assert [entry["name"] for entry in claim["status"]["reservedFor"]] == ["bob-mig-pod"]
    resync()
    mirrored = ResourceClaim.objects.get(namespace="gpu-test1", name="my-mig")
    page.goto(f"{live_server.url}{mirrored.get_absolute_url()}")
    text = page.locator("main").inner_text()
    assert "In use" in text and "bob-mig-pod" in text
    assert "simulated scheduler" in text

    # "Then run the tenant as alice: *Approvals* holds bob's 5-day request for 3 H100s
    # (team-a's policy sends leases over 3 days to her)"
    readme_says(
        "Then run the tenant as alice: *Approvals* holds bob's 5-day request for 3 H100s "
        "(team-a's policy sends leases over 3 days to her)"
    )
    told = [email for email in mail.outbox if email.to == ["alice@example.com"]]
    assert [email.subject for email in told] == [
        "Claim gpu-test1/long-training waits for your approval"
    ]
    assert "/approvals/?tenant=team-a" in told[0].body
    page.context.clear_cookies()
    sign_in(page, "alice", passwords["alice"])
    page.wait_for_url(f"{live_server.url}/")
    page.wait_for_function(
        "() => "
        "document.querySelector('nav a[href=\"/approvals/\"]')?.innerText.trim().endsWith('1')"
    )
    page.get_by_role("link", name="Approvals").click()
    page.wait_for_url("**/approvals/")
    row = page.locator("[data-testid=approval-row]")
    assert row.count() == 1
    row_text = row.inner_text()
    assert "long-training" in row_text and "by bob" in row_text
    assert "3 × gpu.nvidia.com" in row_text
    assert H100_SELECTOR in row_text  # what makes them H100s
    assert "238.9Gi of memory" in row_text
    assert "lease 5d" in row_text
    assert "A lease of 5d: leases longer than 3d need approval." in row_text
    assert "fits now" in row_text, row_text
    shot(page, artifacts_dir, "approvals")
    page.fill("input[name=comment]", "Go ahead.")
    page.get_by_role("button", name="Approve").click()
    page.wait_for_function(
        "() => document.querySelector('main')?.innerText.includes('Approved by alice')"
    )
    # The queue and the badge say so at once.
    page.wait_for_function(
        "() => document.querySelector('[data-testid=pending-count]')?.innerText.trim() === '0'"
    )
    page.wait_for_function("() => !document.querySelector('nav [data-testid=approvals-badge]')")
    shot(page, artifacts_dir, "approvals-decided")
    pending.refresh_from_db()
    assert pending.state == ClaimRequest.State.APPLIED, pending.reason
    results = pending.allocation["devices"]["results"]
    assert len(results) == 3 and {r["pool"][:8] for r in results} == {"dgx-h100"}
    resync()
    page.goto(f"{live_server.url}{pending.get_absolute_url()}")
    assert page.locator("[data-testid=allocated-device]").count() == 3
    assert all(
        "dgx-h100-" in device.inner_text()
        for device in page.locator("[data-testid=allocated-device]").all()
    )

    # "*Governance* → *Tenants & quotas* shows usage bars per limit, members, settings, the
    # ResourceQuota backstop (on for team-a) and the notification webhook"
    readme_says(
        "*Governance* → *Tenants & quotas* shows usage bars per limit, members, settings, the "
        "ResourceQuota backstop (on for team-a) and the notification webhook"
    )
    page.locator("nav").get_by_role("button", name="Governance").click()
    page.locator("nav").get_by_role("link", name="Tenants & quotas").click()
    page.wait_for_url("**/tenants/")
    page.get_by_role("link", name="Team A").first.click()
    page.wait_for_url("**/tenants/team-a/")
    settings_text = page.locator("[data-testid=tenant-settings]").inner_text()
    assert re.search(r"ResourceQuota backstop\s+on", settings_text)
    assert "Notification webhook" in settings_text
    main = page.locator("main").inner_text()
    assert "Members" in main and "alice" in main and "bob" in main
    page.goto(f"{live_server.url}/tenants/team-a/quotas/")
    assert page.locator("[data-testid=usage-devices]").count() >= 1
    shot(page, artifacts_dir, "quotas")

    # "*Reports* gives allocation hours per tenant, namespace, class or GPU model"
    readme_says("*Reports* gives allocation hours per tenant, namespace, class or GPU model")
    page.goto(f"{live_server.url}/reports/")
    options = page.locator("select[name=group_by] option").all_inner_texts()
    assert options == ["Tenant", "Namespace", "Device class", "GPU model"]
    page.goto(f"{live_server.url}/reports/?period=last-7-days&group_by=model")
    assert "NVIDIA H100 80GB HBM3" in page.locator("main").inner_text()

    # "*Audit log* every change."
    readme_says("*Audit log* every change.")
    page.goto(f"{live_server.url}/audit/")
    audit = page.locator("main").inner_text()
    for action in ("Claim requested", "Claim request approved", "Claim request changed state"):
        assert action in audit, action

    # "Emails go to the console in the demo."
    readme_says("Emails go to the console in the demo.")
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith("EMAIL_") and key != "DJANGO_ALLOW_ASYNC_UNSAFE"
    }
    backend = subprocess.run(  # the settings as `make demo` reads them: no EMAIL_HOST
        [
            sys.executable,
            "-c",
            "import django; django.setup(); from django.conf import settings; "
            "print(settings.EMAIL_BACKEND)",
        ],
        env={**environment, "DJANGO_SETTINGS_MODULE": "portal.settings"},
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    ).stdout.strip()
    assert backend == "django.core.mail.backends.console.EmailBackend"

    # A released request reads as released, and says what it freed before.
    page.context.clear_cookies()
    sign_in(page, "bob", passwords["bob"])
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}{mine.get_absolute_url()}")
    page.click("[data-testid=release]")
    confirm = page.locator("[data-testid=release-confirm]")
    confirm.wait_for()
    assert "Freed: 1 device on dgx-h100-" in confirm.inner_text()
    shot(page, artifacts_dir, "release-confirm")
    page.click("[data-testid=confirm-release]")
    page.wait_for_function(
        "() => document.querySelector('[data-testid=request-state]')?.innerText.includes('Releas')"
    )
    resync()
    page.reload()
    assert "Released" in page.locator("[data-testid=request-state]").inner_text()
    shot(page, artifacts_dir, "released")
