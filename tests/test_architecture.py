"""The house's layering, pinned: a wrong import fails CI (STYLE §9).

``dra`` (the pure DRA core) ← ``toolkit`` ← ``portal`` (tenancy) ← ``devices`` ← ``claims`` ←
``mirror`` | ``notifications`` ← ``home`` ← ``demo``, with ``kube`` (the cluster client) on the
ground floor beside ``dra``; the contracts live in ``pyproject.toml`` (import-linter). On top of
them, what imports cannot show: no loop of imports, no Celery task named by a string outside its
own app, no ``apps.get_model`` of another app, no benchmark or script importing the tests, every
package in the contracts, and no module over ~600 lines unless it follows an upstream file.
Each check is run on a small made-up tree too, so a check that stopped finding fails.
"""

from __future__ import annotations

import ast
import tomllib
from collections.abc import Iterator
from pathlib import Path

import grimp
from importlinter.cli import EXIT_STATUS_SUCCESS, lint_imports

ROOT = Path(__file__).resolve().parent.parent
CONFIG = tomllib.loads((ROOT / "pyproject.toml").read_text())
PACKAGES = tuple(CONFIG["tool"]["importlinter"]["root_packages"])
NOT_PACKAGES = {"tests", "benchmarks", "scripts", "static", "templates", "deploy", "docs"}
LONGEST = 600
UPSTREAM = "follows upstream"  # what a longer module's docstring says, naming the file
# The Celery configuration may name any task: the beat schedule and the queue routes.
TASK_NAMES_ALLOWED = {"portal/celery.py"}


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


# -- what imports cannot show -------------------------------------------------------------


def python_files(root: Path, top: str) -> Iterator[Path]:
    for path in sorted((root / top).rglob("*.py")):
        if "migrations" not in path.parts:
            yield path


def app_of(root: Path, path: Path) -> str:
    return path.relative_to(root).parts[0]


def task_names(root: Path, packages: tuple[str, ...]) -> dict[str, str]:
    """Every ``@shared_task(name=...)``: the name → the app that defines it."""
    names = {}
    for top in packages:
        for path in python_files(root, top):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.FunctionDef):
                    for decorator in node.decorator_list:
                        if isinstance(decorator, ast.Call):
                            for keyword in decorator.keywords:
                                if keyword.arg == "name" and isinstance(
                                    keyword.value, ast.Constant
                                ):
                                    names[str(keyword.value.value)] = top
    return names


def task_names_used_across_apps(root: Path, packages: tuple[str, ...]) -> list[str]:
    """Strings equal to a task's name in a module of another app: a task queued by name (it
    should be imported), outside the Celery configuration."""
    names = task_names(root, packages)
    found = []
    for top in packages:
        for path in python_files(root, top):
            relative = path.relative_to(root).as_posix()
            if relative in TASK_NAMES_ALLOWED:
                continue
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Constant) and isinstance(node.value, str):
                    owner = names.get(node.value)
                    if owner is not None and owner != top:
                        found.append(f"{relative}:{node.lineno}: {node.value!r} ({owner}'s)")
    return found


def models_of_other_apps(root: Path, packages: tuple[str, ...]) -> list[str]:
    """``apps.get_model("label", ...)`` of another app through the global registry (it hides an
    import the layering would forbid). A function given ``apps`` (a migration's historical
    registry) is not the global one."""
    found = []
    for top in packages:
        for path in python_files(root, top):
            tree = ast.parse(path.read_text())
            imports_registry = any(
                isinstance(node, ast.ImportFrom)
                and node.module == "django.apps"
                and any(alias.name == "apps" and alias.asname is None for alias in node.names)
                for node in tree.body
            )
            if not imports_registry:
                continue
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "get_model"
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "apps"
                    and node.args
                    and isinstance(node.args[0], ast.Constant)
                ):
                    label = str(node.args[0].value).split(".")[0]
                    if label != top:
                        relative = path.relative_to(root).as_posix()
                        found.append(f"{relative}:{node.lineno}: get_model({label!r}, ...)")
    return found


def imports_of_tests(root: Path, folders: tuple[str, ...]) -> list[str]:
    """Benchmarks and scripts that import the test suite (they share ``harness`` instead)."""
    found = []
    for folder in folders:
        for path in python_files(root, folder):
            for node in ast.walk(ast.parse(path.read_text())):
                modules = []
                if isinstance(node, ast.Import):
                    modules = [alias.name for alias in node.names]
                elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                    modules = [node.module]
                for module in modules:
                    if module == "tests" or module.startswith("tests."):
                        found.append(f"{path.relative_to(root).as_posix()}:{node.lineno}")
    return found


def packages_on_disk(root: Path) -> set[str]:
    return {
        path.parent.name
        for path in root.glob("*/__init__.py")
        if path.parent.name not in NOT_PACKAGES and not path.parent.name.startswith(".")
    }


def packages_outside_the_contracts(root: Path, config: dict) -> list[str]:
    """Packages of the repository that no import contract looks at."""
    linter = config["tool"]["importlinter"]
    named = set(linter["root_packages"])
    covered = set()
    for contract in linter["contracts"]:
        for field in ("layers", "source_modules", "forbidden_modules"):
            for entry in contract.get(field, []):
                for part in entry.split("|"):
                    covered.add(part.strip().split(".")[0])
    return sorted((packages_on_disk(root) - named) | (named - covered))


def modules_too_long(root: Path, packages: tuple[str, ...]) -> list[str]:
    found = []
    for top in packages:
        for path in python_files(root, top):
            text = path.read_text()
            if text.count("\n") > LONGEST and UPSTREAM not in (
                ast.get_docstring(ast.parse(text)) or ""
            ):
                found.append(f"{path.relative_to(root).as_posix()}: {text.count(chr(10))} lines")
    return found


def test_no_task_is_queued_by_name_from_another_app():
    assert task_names_used_across_apps(ROOT, PACKAGES) == []


def test_no_app_reaches_another_apps_models_through_the_registry():
    assert models_of_other_apps(ROOT, PACKAGES) == []


def test_benchmarks_and_scripts_do_not_import_the_tests():
    assert imports_of_tests(ROOT, ("benchmarks", "scripts")) == []


def test_every_package_is_in_the_import_contracts():
    assert packages_outside_the_contracts(ROOT, CONFIG) == []


def test_no_module_is_longer_than_600_lines_unless_it_follows_upstream():
    assert modules_too_long(ROOT, PACKAGES) == []
    assert modules_too_long(ROOT / "cli" / "src", ("dra_portal_client", "dra_portal_cli")) == []


# -- the checks find what they look for -----------------------------------------------------


def write(root: Path, relative: str, text: str) -> None:
    path = root / relative
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_the_checks_find_what_they_look_for(tmp_path):
    write(tmp_path, "alpha/__init__.py", "")
    write(
        tmp_path,
        "alpha/tasks.py",
        "from celery import shared_task\n\n"
        "@shared_task(name='alpha.work')\ndef work():\n    pass\n",
    )
    write(tmp_path, "beta/__init__.py", "")
    write(
        tmp_path,
        "beta/services.py",
        "from django.apps import apps\n\n"
        "def go():\n"
        "    apps.get_model('alpha', 'Thing')\n"
        "    queue('alpha.work')\n",
    )
    write(tmp_path, "beta/long.py", '"""Long."""\n' + "x = 1\n" * (LONGEST + 5))
    write(tmp_path, "beta/copied.py", f'"""It {UPSTREAM}: x.go."""\n' + "x = 1\n" * (LONGEST + 5))
    write(tmp_path, "gamma/__init__.py", "")
    write(
        tmp_path, "benchmarks/bench.py", "from tests.stack import Stack\nimport tests.factories\n"
    )
    packages = ("alpha", "beta")
    config = {
        "tool": {
            "importlinter": {
                "root_packages": ["alpha", "beta"],
                "contracts": [{"layers": ["beta"]}],
            }
        }
    }

    assert task_names_used_across_apps(tmp_path, packages) == [
        "beta/services.py:5: 'alpha.work' (alpha's)"
    ]
    assert models_of_other_apps(tmp_path, packages) == [
        "beta/services.py:4: get_model('alpha', ...)"
    ]
    assert imports_of_tests(tmp_path, ("benchmarks",)) == [
        "benchmarks/bench.py:1",
        "benchmarks/bench.py:2",
    ]
    assert packages_outside_the_contracts(tmp_path, config) == ["alpha", "gamma"]
    assert modules_too_long(tmp_path, packages) == [f"beta/long.py: {LONGEST + 6} lines"]
