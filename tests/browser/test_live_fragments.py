"""Live fragments behave as before under the Content-Security-Policy, with htmx evaluating
nothing (static/js/portal.js does what hx-on and the trigger filters did): a hidden tab skips
the polls, a request page stops reloading while its release form is open, and the node page's
opened partitions stay open across its reloads. A reload is asked of htmx as its poll asks it
(``htmx.ajax`` from the live element: the same events), so no test waits for the timer."""

from __future__ import annotations

import dataclasses
import datetime as dt

import pytest
from django.contrib.auth import get_user_model

from claims.requests.services import submit_request
from demo.data import DEMO_PENDING

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

RELOAD = """([selector, swap]) => new Promise((done) => {
  const live = document.querySelector(selector);
  htmx.ajax("GET", live.getAttribute("hx-get"), {source: live, target: live, swap})
    .then(() => done(true));
})"""

SET_VISIBILITY = """state => Object.defineProperty(
  document, "visibilityState", {value: state, configurable: true})"""


def requests_to(page, path: str) -> list[str]:
    seen: list[str] = []
    page.on("request", lambda request: path in request.url and seen.append(request.url))
    return seen


def sign_in(page, base: str, username: str, password: str) -> None:
    page.goto(f"{base}/login/")
    page.fill("#id_username", username)
    page.fill("#id_password", password)
    page.click("button[type=submit]")
    page.wait_for_url(f"{base}/")


def test_a_hidden_tab_skips_the_polls_and_a_visible_one_reloads(
    browser_page, live_server, live, demo_seeded
):
    page = browser_page
    sign_in(page, live_server.url, "bob", demo_seeded["bob"])
    page.goto(f"{live_server.url}/nodes/")
    page.wait_for_load_state("networkidle")
    seen = requests_to(page, "/nodes/")
    page.evaluate(SET_VISIBILITY, "hidden")
    page.evaluate(RELOAD, ["#node-table", "outerHTML"])
    assert seen == []
    page.evaluate(SET_VISIBILITY, "visible")
    page.evaluate(RELOAD, ["#node-table", "outerHTML"])
    assert len(seen) == 1


def test_a_request_page_stops_reloading_while_its_release_form_is_open(
    browser_page, live_server, live, demo_seeded
):
    page = browser_page
    bob = get_user_model().objects.get(username="bob")
    short = dataclasses.replace(DEMO_PENDING, name="short", lease=dt.timedelta(days=1))
    request = submit_request(user=bob, claim=short, idempotency_key="live-fragments")
    assert not request.awaits_approval
    sign_in(page, live_server.url, "bob", demo_seeded["bob"])
    page.goto(f"{live_server.url}/claims/requests/{request.pk}/")
    page.wait_for_load_state("networkidle")
    seen = requests_to(page, f"/claims/requests/{request.pk}/")
    page.evaluate(RELOAD, ["#request-status", "outerHTML"])
    assert len(seen) == 1
    page.click("[data-testid=release]")
    page.locator("[data-testid=release-form]").wait_for()
    seen.clear()
    page.evaluate(RELOAD, ["#request-status", "outerHTML"])
    assert [url for url in seen if "/release/" not in url] == []
    page.locator("[data-testid=release-form]").wait_for()  # still there to be confirmed


def test_partitions_a_reader_opened_stay_open_across_reloads(
    browser_page, live_server, live, demo_seeded
):
    page = browser_page
    sign_in(page, live_server.url, "bob", demo_seeded["bob"])
    page.goto(f"{live_server.url}/nodes/dgx-a100-01/")
    partitions = page.locator("#node-devices details[id^=partitions-]")
    assert partitions.count() >= 2
    opened = partitions.first.get_attribute("id")
    page.locator(f"#{opened} > summary").click()
    assert page.locator(f"#{opened}").evaluate("d => d.open")
    page.evaluate(RELOAD, ["#node-devices", "innerHTML"])
    assert page.locator(f"#{opened}").evaluate("d => d.open")
    closed = partitions.nth(1).get_attribute("id")
    assert not page.locator(f"#{closed}").evaluate("d => d.open")
