"""Meta-test: tenancy rows are written only by ``portal/services/`` (STYLE §4).

An AST scan of the project's source flags, outside the services, migrations and tests, every
write call (``save``, ``delete``, ``create``, ``update``, ``bulk_create``, ``get_or_create``,
``update_or_create``; plus ``add``/``set``/``remove``/``clear`` on related managers) made on
Tenant, TenantNamespace, Membership or Quota: through the model's manager
(``Quota.objects.filter(...).update()``), a tenancy related manager (``tenant.quotas.create()``),
or a name bound to such a row or queryset in the same function (``quota = Quota(...)``,
``tenant: Tenant``, ``for m in Membership.objects.all()``). Writes on other models are not
flagged. The Django admin's built-in writes are checked too: calling ``super().save_model()``
and friends, or registering one of these models without overriding them.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest
from django.contrib import admin

from portal.models import Membership, Quota, Tenant, TenantNamespace

ROOT = Path(__file__).resolve().parents[2]
MODELS = {"Tenant", "TenantNamespace", "Membership", "Quota"}
RELATED_MANAGERS = {"namespaces", "memberships", "quotas"}
WRITES = {
    "save",
    "delete",
    "create",
    "update",
    "bulk_create",
    "bulk_update",
    "get_or_create",
    "update_or_create",
}
RELATED_WRITES = WRITES | {"add", "set", "remove", "clear"}
# Reads that end a chain in something that is no longer a row or a queryset of rows.
NOT_ROWS = {"values", "values_list", "count", "exists", "aggregate", "in_bulk", "iterator"}
ADMIN_WRITES = {"save_model", "delete_model", "delete_queryset", "save_formset", "save_related"}
SKIPPED_DIRS = {"migrations", "tests", ".venv", "node_modules", "staticfiles", "var"}


def _root_and_chain(node: ast.expr) -> tuple[ast.expr, list[str]]:
    """``a.b(...).c`` → (``a``, ["b", "c"]): the innermost expression and the names on the way."""
    chain: list[str] = []
    while True:
        if isinstance(node, ast.Call):
            node = node.func
        elif isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        elif isinstance(node, ast.Subscript):
            node = node.value
        else:
            return node, chain[::-1]


def _is_tenancy_expression(node: ast.expr, rows: set[str]) -> bool:
    """Whether ``node`` evaluates to a tenancy row, queryset or manager."""
    root, chain = _root_and_chain(node)
    if any(name in NOT_ROWS for name in chain):
        return False
    if isinstance(root, ast.Name) and (root.id in MODELS or root.id in rows):
        return True
    return any(name in RELATED_MANAGERS for name in chain)


def _annotation_names(annotation: ast.expr | None) -> set[str]:
    """The names an annotation mentions, looking inside string (forward) annotations."""
    if annotation is None:
        return set()
    names: set[str] = set()
    for node in ast.walk(annotation):
        if isinstance(node, ast.Name):
            names.add(node.id)
        elif isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            try:
                names |= _annotation_names(ast.parse(node.value, mode="eval").body)
            except SyntaxError:
                continue
    return names


def _bound_names(target: ast.expr) -> list[str]:
    """Names an assignment target rebinds (``a``, ``a, b``), not ``a.b = ...`` or ``a[0] = ...``."""
    if isinstance(target, ast.Name):
        return [target.id]
    if isinstance(target, ast.Tuple | ast.List):
        return [name for item in target.elts for name in _bound_names(item)]
    if isinstance(target, ast.Starred):
        return _bound_names(target.value)
    return []


class _Scanner(ast.NodeVisitor):
    def __init__(self) -> None:
        self.findings: list[tuple[int, str]] = []
        self.scopes: list[set[str]] = [set()]

    @property
    def rows(self) -> set[str]:
        return set().union(*self.scopes)

    def _function(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        scope = {
            arg.arg
            for arg in [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
            if _annotation_names(arg.annotation) & MODELS
        }
        self.scopes.append(scope)
        self.generic_visit(node)
        self.scopes.pop()

    visit_FunctionDef = _function
    visit_AsyncFunctionDef = _function

    def _bind(self, target: ast.expr, value: ast.expr | None, annotation: ast.expr | None) -> None:
        names = _bound_names(target)
        typed = bool(_annotation_names(annotation) & MODELS)
        if typed or (value is not None and _is_tenancy_expression(value, self.rows)):
            self.scopes[-1].update(names)
        else:
            self.scopes[-1].difference_update(names)

    def visit_Assign(self, node: ast.Assign) -> None:
        self.generic_visit(node)
        for target in node.targets:
            self._bind(target, node.value, None)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self.generic_visit(node)
        self._bind(node.target, node.value, node.annotation)

    def visit_For(self, node: ast.For) -> None:
        self._bind(node.target, node.iter, None)
        self.generic_visit(node)

    def visit_Call(self, node: ast.Call) -> None:
        self.generic_visit(node)
        func = node.func
        if not isinstance(func, ast.Attribute):
            return
        receiver, method = func.value, func.attr
        _, chain = _root_and_chain(receiver)
        if method in ADMIN_WRITES and _is_super_call(receiver):
            self.findings.append((node.lineno, f"super().{method}()"))
        elif method in RELATED_WRITES and chain and chain[-1] in RELATED_MANAGERS:
            self.findings.append((node.lineno, f".{chain[-1]}.{method}()"))
        elif method in WRITES and _is_tenancy_expression(receiver, self.rows):
            self.findings.append((node.lineno, f".{method}()"))


def _is_super_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def direct_writes(source: str) -> list[tuple[int, str]]:
    """(line, call) of each tenancy write in ``source``."""
    scanner = _Scanner()
    scanner.visit(ast.parse(source))
    return scanner.findings


def project_modules() -> Iterator[Path]:
    for path in sorted(ROOT.rglob("*.py")):
        relative = path.relative_to(ROOT)
        if SKIPPED_DIRS & set(relative.parts) or relative.parts[:2] == ("portal", "services"):
            continue
        yield path


def test_only_the_services_write_tenancy_rows():
    offenders = [
        f"{path.relative_to(ROOT)}:{line}: {call}"
        for path in project_modules()
        for line, call in direct_writes(path.read_text(encoding="utf-8"))
    ]
    assert offenders == [], "write these through portal.services:\n" + "\n".join(offenders)


def test_the_scan_covers_the_entry_points():
    scanned = {str(path.relative_to(ROOT)) for path in project_modules()}
    assert {"portal/admin.py", "portal/api/views.py", "portal/views/tenants.py"} <= scanned
    assert not any(name.startswith(("portal/services/", "tests/")) for name in scanned)


@pytest.mark.parametrize(
    "source",
    [
        "Tenant.objects.create(name='x')",
        "Quota.objects.filter(tenant=t).update(max_devices=1)",
        "Membership.objects.select_for_update().get_or_create(user=u, tenant=t)",
        "TenantNamespace.objects.bulk_create([])",
        "Quota.objects.update_or_create(tenant=t, defaults={})",
        "Tenant(name='x').save()",
        "tenant.quotas.create(device_class_name='gpu')",
        "request.user.memberships.all().delete()",
        "tenant.namespaces.add(namespace)",
        "def f():\n    quota = Quota.objects.get(pk=1)\n    quota.max_claims = 2\n    quota.save()",
        "def f(tenant: Tenant):\n    tenant.delete()",
        "def f(tenant: 'Tenant | None'):\n    tenant.save(update_fields=['name'])",
        "for membership in Membership.objects.all():\n    membership.delete()",
        "class A:\n    def save_model(self, r, obj, form, change):\n"
        "        super().save_model(r, obj, form, change)",
    ],
)
def test_the_scan_flags_a_direct_write(source):
    assert len(direct_writes(source)) == 1


@pytest.mark.parametrize(
    "source",
    [
        "ApiToken.objects.create(user=u)",
        "token.save(update_fields=['revoked_at'])",
        "DeviceClass.objects.filter(name='x').delete()",
        "names = set(); names.update(['a'])",
        "def f(tenant: Tenant):\n    data = {}\n    data.update(name=tenant.name)",
        "def f():\n    n = Quota.objects.count()\n    n.update()",
        "def f():\n    quota = Quota.objects.first()\n    quota = Token()\n    quota.save()",
        "user.save()",
        "Tenant.objects.visible_to(user).filter(slug=s).first()",
    ],
)
def test_the_scan_leaves_other_writes_alone(source):
    assert direct_writes(source) == []


def test_every_tenancy_admin_overrides_djangos_direct_writes():
    for model in (Tenant, TenantNamespace, Membership, Quota):
        model_admin = admin.site._registry.get(model)
        if model_admin is None:
            continue  # edited only as an inline of the tenant, through its save_formset
        for method in ("save_model", "delete_model", "delete_queryset"):
            owner = next(c for c in type(model_admin).__mro__ if method in vars(c))
            assert owner.__module__ == "portal.admin", (model.__name__, method)
        if model_admin.inlines:
            owner = next(c for c in type(model_admin).__mro__ if "save_formset" in vars(c))
            assert owner.__module__ == "portal.admin", (model.__name__, "save_formset")
