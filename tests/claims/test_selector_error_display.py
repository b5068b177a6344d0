"""A selector that does not compile is shown as CEL reports it, readably: numbered from 1
everywhere, with cel-go's diagram as the expression and a caret under the failing column in
monospace (the New-claim form and its preview, the device class page); the API's message keeps
CEL's text and the same numbering."""

from __future__ import annotations

import html
import re

import pytest
from django.urls import reverse

from devices.models import DeviceClass
from dra.cel import compile_selector

pytestmark = pytest.mark.django_db

BROKEN = "device.driver == 1"
# cel-go: "<input>:1:15: found no matching overload ..." — the caret under the 15th character.
DIAGRAM = "device.driver == 1\n              ^"
FORM = {
    "namespace": "gpu-test1",
    "name": "broken",
    "device_class": "gpu.nvidia.com",
    "count": "1",
    "selectors": f'device.driver == "gpu.nvidia.com"\n{BROKEN}',
    "constraint": "",
    "sharing": "claim",
    "lease": "",
}


def diagrams(body: str) -> list[str]:
    found = re.findall(
        r'<pre class="cel-diagram" data-testid="cel-diagram">(.*?)</pre>', body, re.S
    )
    return [html.unescape(text) for text in found]


def assert_readable(body: str, number: int) -> None:
    assert DIAGRAM in diagrams(body)
    assert f"Selector {number}: compilation failed" in body
    assert " | " not in html.unescape(body)  # the diagram is not flattened into the text
    assert "selector #0" not in body.lower()


def test_the_new_claim_form_shows_the_caret_under_the_second_selector(inventory, client_as, bob):
    response = client_as(bob).post(reverse("claimrequest-new"), FORM)
    assert response.status_code == 422
    assert_readable(response.content.decode(), 2)


def test_the_preview_shows_the_caret_under_the_expression(inventory, client_as, bob):
    response = client_as(bob).post(
        reverse("claimrequest-preview"), {**FORM, "selectors": BROKEN}, HTTP_HX_REQUEST="true"
    )
    assert response.status_code == 200
    assert_readable(response.content.decode(), 1)


def test_the_device_class_page_numbers_from_1_with_the_diagram(client_as, alice, mirrored_cluster):
    broken = DeviceClass.objects.get(name="gpu.example.com")
    broken.selectors = [{"cel": {"expression": "true"}}, {"cel": {"expression": BROKEN}}]
    broken.save()
    body = client_as(alice).get("/device-classes/gpu.example.com/").content.decode()
    assert_readable(body, 2)


def test_the_api_keeps_cels_text_and_numbers_from_1(live, api_as, bob):
    response = api_as(bob).post(
        "/api/v1/claim-requests/",
        {
            "namespace": "gpu-test1",
            "name": "broken",
            "device_class": "gpu.nvidia.com",
            "selectors": ["true", BROKEN],
        },
        format="json",
    )
    assert response.status_code == 400
    assert response.json()["error"]["fields"]["selectors"] == [
        f"Selector 2: {compile_selector(BROKEN).error}"
    ]


def test_a_long_expression_is_cut_around_the_caret(client_as, alice, mirrored_cluster):
    long = 'device.attributes["gpu.example.com"].model == "LATEST-GPU-MODEL" && devic.x == 1'
    broken = DeviceClass.objects.get(name="gpu.example.com")
    broken.selectors = [{"cel": {"expression": long}}]
    broken.save()
    body = client_as(alice).get("/device-classes/gpu.example.com/").content.decode()
    (diagram,) = diagrams(body)
    expression, caret = diagram.split("\n")
    assert expression.startswith("…") and len(expression) <= 46
    column = caret.index("^")  # cel-go points at the "." of the undeclared "devic.x"
    assert expression[column - 5 : column + 2] == "devic.x"
