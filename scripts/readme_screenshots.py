"""Takes README.md's screenshots again from a fresh demo: ``docs/img/new-claim.png`` (bob's New
claim form as the README's "Try a claim as bob" describes it) and ``docs/img/approvals.png``
(alice's queue with bob's 5-day request for 3 H100s).

Run: ``.venv/bin/python scripts/readme_screenshots.py`` (needs Debian's chromium and
Playwright, as the browser tests do). The demo runs in a temporary folder of its own, on free
ports; nothing of ``var/`` is touched.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
IMAGES = ROOT / "docs" / "img"
CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
# What the README tells bob to type.
SELECTOR = 'device.attributes["gpu.nvidia.com"].productName == "NVIDIA H100 80GB HBM3"'


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def wait_for_page(url: str, seconds: float) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(url, timeout=5):  # noqa: S310 - loopback
                return
        except (urllib.error.URLError, ConnectionError):
            time.sleep(0.5)
    raise SystemExit(f"the demo did not answer at {url} within {seconds} s")


def main() -> None:
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="dra-portal-screenshots-"))
    port, emulator_port = free_port(), free_port()
    env = {**os.environ, "PORTAL_VAR_DIR": str(folder)}
    for name in ("DATABASE_URL", "REDIS_URL", "KUBE_API_SERVER", "KUBECONFIG"):
        env.pop(name, None)
    python = sys.executable
    subprocess.run(  # noqa: S603 - this interpreter and our own arguments
        [python, "manage.py", "migrate", "--no-input"],
        cwd=ROOT,
        env=env,
        check=True,
        capture_output=True,
    )
    log = open(folder / "demo.log", "w")  # noqa: SIM115 - closed below
    demo = subprocess.Popen(  # noqa: S603
        [python, "manage.py", "demo", "--port", str(port), "--emulator-port", str(emulator_port)],
        cwd=ROOT,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        wait_for_page(f"{base}/login/", 120)
        passwords = json.loads((folder / "demo_passwords.json").read_text())
        time.sleep(5)  # the mirror's first lists and the seeded pending request
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(
                executable_path="/usr/bin/chromium", args=CHROMIUM_FLAGS
            )
            page = browser.new_context(viewport={"width": 1400, "height": 900}).new_page()

            def sign_in(user: str) -> None:
                page.context.clear_cookies()
                page.goto(f"{base}/login/")
                page.fill("#id_username", user)
                page.fill("#id_password", passwords[user])
                page.click("button[type=submit]")
                page.wait_for_url(f"{base}/")

            sign_in("bob")
            page.goto(f"{base}/claims/requests/new/")
            page.select_option("select[name=namespace]", "gpu-test1")
            page.select_option("select[name=device_class]", "gpu.nvidia.com")
            page.select_option("select[name=count]", "2")
            page.fill("input[name=name]", "two-h100s")
            page.locator("textarea[name=selectors]").press_sequentially(SELECTOR)
            # Each keystroke queues a preview (the last one wins): wait until they are all in.
            page.wait_for_load_state("networkidle")
            page.wait_for_selector("text=It would fit now")
            page.wait_for_load_state("networkidle")
            page.screenshot(path=IMAGES / "new-claim.png", full_page=True)

            sign_in("alice")
            page.goto(f"{base}/approvals/")
            page.wait_for_selector("[data-testid=approval-row]")
            page.wait_for_load_state("networkidle")
            page.screenshot(path=IMAGES / "approvals.png", full_page=True)
            browser.close()
        print(f"wrote {IMAGES / 'new-claim.png'} and {IMAGES / 'approvals.png'}")
    finally:
        demo.terminate()
        demo.wait(timeout=30)
        log.close()


if __name__ == "__main__":
    main()
