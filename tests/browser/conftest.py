"""Browser fixtures: Playwright driving Debian's chromium, headless, against the live server."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

CHROMIUM_FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]


@pytest.fixture
def browser_page(chromium_path: str, monkeypatch: pytest.MonkeyPatch) -> Iterator[object]:
    from playwright.sync_api import sync_playwright

    # Playwright's sync API runs an event loop in this thread; the live server's ORM calls
    # happen in another thread, so Django's async-safety guard can be relaxed here only.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=chromium_path, args=CHROMIUM_FLAGS)
        context = browser.new_context(viewport={"width": 1366, "height": 820})
        page = context.new_page()
        page.set_default_timeout(15_000)
        try:
            yield page
        finally:
            context.close()
            browser.close()


@pytest.fixture
def sign_in(live_server):
    def do(page, username: str, password: str = "correct horse battery") -> None:  # noqa: S107
        page.goto(f"{live_server.url}/login/")
        page.fill("#id_username", username)
        page.fill("#id_password", password)
        page.click("button[type=submit]")

    return do
