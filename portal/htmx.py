"""One URL, two renderings (STYLE §10): the whole page, or the fragment htmx asked for."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.utils.cache import patch_vary_headers

__all__ = ["render_page", "wants_fragment"]


def wants_fragment(request: HttpRequest) -> bool:
    """True for an htmx request that will swap part of the page.

    Boosted requests and history restores need the whole page, so they get it.
    """
    htmx = getattr(request, "htmx", None)
    return bool(htmx) and not htmx.boosted and not htmx.history_restore_request


def render_page(
    request: HttpRequest,
    template: str,
    fragment: str,
    context: dict[str, Any],
    status: int = 200,
) -> HttpResponse:
    """Renders ``template`` whole, or its ``{% partialdef fragment %}`` for htmx."""
    name = f"{template}#{fragment}" if wants_fragment(request) else template
    response = render(request, name, context, status=status)
    patch_vary_headers(response, ["HX-Request"])
    return response
