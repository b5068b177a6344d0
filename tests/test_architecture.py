"""The house's layering, pinned: a wrong import fails CI (STYLE §9).

``dra`` (the pure DRA core) ← ``portal`` (tenancy) ← ``devices`` ← ``claims`` ← ``mirror``;
the contracts live in ``pyproject.toml`` (import-linter). On top of them, no two modules of
the project may import each other in a loop, directly or around a circle.
"""

from __future__ import annotations

from pathlib import Path

import grimp
from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("dra", "portal", "devices", "claims", "mirror", "home", "apiemulator")


def test_the_import_contracts_hold(monkeypatch):
    monkeypatch.chdir(ROOT)
    assert lint_imports(no_cache=True) == EXIT_STATUS_SUCCESS


def import_loops(graph: grimp.ImportGraph) -> list[list[str]]:
    """The strongly connected sets of modules (Tarjan), each a loop of imports."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    loops: list[list[str]] = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        on_stack.add(module)
        for imported in sorted(graph.find_modules_directly_imported_by(module)):
            if imported not in index:
                visit(imported)
                low[module] = min(low[module], low[imported])
            elif imported in on_stack:
                low[module] = min(low[module], index[imported])
        if low[module] == index[module]:
            loop = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                loop.append(member)
                if member == module:
                    break
            if len(loop) > 1:
                loops.append(sorted(loop))

    for module in sorted(graph.modules):
        if module not in index:
            visit(module)
    return loops


def test_no_module_imports_itself_around_a_loop(monkeypatch):
    monkeypatch.syspath_prepend(str(ROOT))
    assert import_loops(grimp.build_graph(*PACKAGES)) == []


def test_the_loop_finder_finds_a_loop():
    graph = grimp.ImportGraph()
    for module in ("pkg", "pkg.a", "pkg.b", "pkg.c"):
        graph.add_module(module)
    graph.add_import(importer="pkg.a", imported="pkg.b")
    graph.add_import(importer="pkg.b", imported="pkg.a")
    graph.add_import(importer="pkg.c", imported="pkg.a")
    assert import_loops(graph) == [["pkg.a", "pkg.b"]]
