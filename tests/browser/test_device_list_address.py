"""The device list's address follows its filter form: after each filter change, and after going
back through them, the URL (a bookmark, a reload) names exactly the filters the form shows, and
the next change builds on them."""

from __future__ import annotations

from urllib.parse import parse_qsl, urlsplit

import pytest

from tests.devices.cluster_data import load_fixture_cluster

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

A100 = "NVIDIA A100-SXM4-40GB"
FILTERS = ("q", "driver", "model", "node", "device_class", "state")


def _url_filters(page) -> dict[str, str]:
    return {name: value for name, value in parse_qsl(urlsplit(page.url).query) if value}


def _form_filters(page) -> dict[str, str]:
    form = page.locator("[data-testid=filter-form]")
    values = {name: form.locator(f"[name={name}]").input_value() for name in FILTERS}
    return {name: value for name, value in values.items() if value}


def _rows(page) -> list[str]:
    page.wait_for_load_state("networkidle")
    return page.locator("#device-table tbody tr").all_inner_texts()


def test_it_keeps_the_address_the_form_and_the_list_in_step(
    browser_page, sign_in, live_server, root
):
    load_fixture_cluster()
    page = browser_page
    sign_in(page, "root")
    page.wait_for_url(f"{live_server.url}/")
    page.goto(f"{live_server.url}/devices/")

    page.select_option("select[name=model]", A100)
    page.wait_for_function("() => new URLSearchParams(location.search).get('model') !== null")
    by_model = _rows(page)
    page.select_option("select[name=state]", "free")
    page.wait_for_function("() => new URLSearchParams(location.search).get('state') === 'free'")
    assert _url_filters(page) == _form_filters(page) == {"model": A100, "state": "free"}
    free_of_model = _rows(page)
    assert free_of_model != by_model

    # Back to the model alone: the form says what the address and the list say ...
    page.go_back()
    page.wait_for_function("() => new URLSearchParams(location.search).get('state') !== 'free'")
    assert _url_filters(page) == _form_filters(page) == {"model": A100}
    assert _rows(page) == by_model

    # ... so the next change keeps the model, and a reload shows the same list.
    page.select_option("select[name=node]", "dgx-a100-01")
    page.wait_for_function(
        "() => new URLSearchParams(location.search).get('node') === 'dgx-a100-01'"
    )
    assert _url_filters(page) == _form_filters(page) == {"model": A100, "node": "dgx-a100-01"}
    shown = _rows(page)
    page.reload()
    assert _form_filters(page) == _url_filters(page)
    assert _rows(page) == shown
