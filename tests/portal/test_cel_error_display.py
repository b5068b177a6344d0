"""``{% cel_error %}``: how pages show a CEL error message, the allocator's included."""

from __future__ import annotations

from django.template import Context, Template

from dra.allocator.contract import run_case

TEMPLATE = Template("{% load portal_format %}{% cel_error message %}")


def render(message: str) -> str:
    return TEMPLATE.render(Context({"message": message}))


def allocator_error(expression: str) -> str:
    """What ``manage.py allocate`` answers for a class whose only selector is ``expression``."""
    case = {
        "name": "broken-class",
        "nodes": [{"metadata": {"name": "node-1", "labels": {}}}],
        "deviceClasses": [
            {
                "metadata": {"name": "gpu"},
                "spec": {"selectors": [{"cel": {"expression": expression}}]},
            }
        ],
        "resourceSlices": [
            {
                "metadata": {"name": "slice"},
                "spec": {
                    "driver": "gpu.example.com",
                    "nodeName": "node-1",
                    "pool": {"name": "node-1", "generation": 1, "resourceSliceCount": 1},
                    "devices": [{"name": "gpu-0"}],
                },
            }
        ],
        "claims": [
            {
                "metadata": {"name": "claim", "namespace": "default", "uid": "u1"},
                "spec": {
                    "devices": {
                        "requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu"}}]
                    }
                },
            }
        ],
        "node": "node-1",
    }
    answer = run_case(case)
    assert answer["status"] == "error", answer
    return str(answer["error"])


def test_the_allocator_keeps_kubernetes_numbering_and_the_page_counts_from_one():
    message = allocator_error("device.driver ==")

    assert "selector #0" in message  # upstream's words, for the allocate contract
    shown = render(message)
    assert "selector 1:" in shown
    assert "selector #0" not in shown
    assert '<pre class="cel-diagram"' in shown


def test_a_message_without_a_diagram_is_text():
    assert render("no devices fit") == '<span class="cel-error-text">no devices fit</span>'
