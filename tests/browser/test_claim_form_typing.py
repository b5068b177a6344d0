"""Typing in New claim refreshes the preview without errors in the browser's console: a
keystroke while the previous preview is still on its way waits for it instead of aborting it
(an aborted request is logged as an ``htmx:sendAbort`` error), and the preview ends on what
was typed last."""

from __future__ import annotations

import time

import pytest

import claims.requests.views.requests

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_typing_logs_no_errors_and_the_preview_follows_the_last_keystroke(
    browser_page, sign_in, live_server, live, bob, monkeypatch
):
    page = browser_page
    errors: list[str] = []
    page.on("console", lambda message: message.type == "error" and errors.append(message.text))
    sign_in(page, "bob")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/claims/requests/new/")
    page.select_option("select[name=namespace]", "gpu-test1")
    page.select_option("select[name=device_class]", "gpu.nvidia.com")
    page.wait_for_selector("[data-testid=preview-matching]")

    # A preview slower than the typing pause (300 ms), as on a busy portal: each keystroke's
    # preview is asked for while the one before is still being answered.
    answer = claims.requests.views.requests._preview_of

    def slow_preview(form):
        time.sleep(0.5)
        return answer(form)

    monkeypatch.setattr(claims.requests.views.requests, "_preview_of", slow_preview)
    page.locator("input[name=name]").press_sequentially("run-abc", delay=350)
    page.wait_for_function(
        "t => document.querySelector('[data-testid=preview-yaml]')?.textContent.includes(t)",
        arg="name: run-abc",
        timeout=30_000,
    )
    page.wait_for_load_state("networkidle")
    assert errors == []


def test_the_yaml_a_reader_opened_stays_open_while_the_preview_follows_the_typing(
    browser_page, sign_in, live_server, live, bob
):
    page = browser_page
    sign_in(page, "bob")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/claims/requests/new/")
    page.select_option("select[name=namespace]", "gpu-test1")
    page.fill("input[name=name]", "run-one")
    page.select_option("select[name=device_class]", "gpu.nvidia.com")
    page.wait_for_function(
        "t => document.querySelector('[data-testid=preview-yaml]')?.textContent.includes(t)",
        arg="name: run-one",
    )
    page.wait_for_load_state("networkidle")
    page.locator("#preview-yaml-details summary").click()
    assert page.locator("#preview-yaml-details").evaluate("details => details.open")

    page.fill("input[name=name]", "run-two")
    page.wait_for_function(
        "t => document.querySelector('[data-testid=preview-yaml]')?.textContent.includes(t)",
        arg="name: run-two",
    )
    page.wait_for_load_state("networkidle")
    assert page.locator("#preview-yaml-details").evaluate("details => details.open")
    assert page.get_by_test_id("preview-yaml").is_visible()
