"""The fragmentation advisor's pages: cluster-wide (``/fragmentation/``) and one node's panel
(``/fragmentation/nodes/<name>/``), which the node page loads with htmx.

The answers are inventory, not tenant data: like the node and device pages, any signed-in
user sees them. Parse → gate (login; an unknown node is 404) → compute
(``claims.capacity.fragmentation``, kept per index version) → respond.
"""

from __future__ import annotations

from django.contrib.auth.decorators import login_required
from django.http import Http404, HttpRequest, HttpResponse

from claims.capacity.fragmentation import MAX_FITS, class_grids
from claims.capacity.fragmentation_reads import cluster_advice, is_known_node, node_advice
from toolkit.htmx import render_page

__all__ = ["fragmentation", "fragmentation_node"]


@login_required
def fragmentation(request: HttpRequest) -> HttpResponse:
    report = cluster_advice()
    context = {"report": report, "grids": class_grids(report), "max_fits": MAX_FITS}
    return render_page(request, "claims/fragmentation.html", "fragmentation-body", context)


@login_required
def fragmentation_node(request: HttpRequest, name: str) -> HttpResponse:
    if not is_known_node(name):
        raise Http404("No such node.")
    context = {"name": name, "advice": node_advice(name), "max_fits": MAX_FITS}
    return render_page(request, "claims/fragmentation_node.html", "node-fragmentation", context)
