"""Meta-test: no template and no HTML the Python code builds holds what the
Content-Security-Policy refuses (docs/security.md): a ``<script>`` without ``src``, a
``<style>`` block, a ``style`` attribute, an ``on…=`` event handler, a ``javascript`` URL, or
htmx that needs ``eval`` (``hx-on``, a trigger filter ``[...]``, ``js:`` values). Scripts go
to ``static/js``, styles to ``static/css`` classes."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
APPS = ("portal", "devices", "claims", "mirror", "notifications", "home")

REFUSED = {
    "an inline <script>": re.compile(r"<script\b(?![^>]*\bsrc=)(?![^>]*application/json)[^>]*>"),
    "a <style> block": re.compile(r"<style\b", re.I),
    "a style attribute": re.compile(r"""\sstyle\s*=\s*\\?["'{]""", re.I),
    "an event handler attribute": re.compile(r"""\son[a-z]+\s*=\s*\\?["']""", re.I),
    "a javascript URL": re.compile(r"javascript:", re.I),
    "hx-on (eval)": re.compile(r"\b(?:data-)?hx-on"),
    "an htmx trigger filter (eval)": re.compile(r"""hx-trigger\s*=\s*["'][^"']*\["""),
    "htmx js values (eval)": re.compile(r"""hx-(?:vals|vars|headers)\s*=\s*\\?["']\s*js:"""),
}


def offences(path: Path, root: Path = ROOT) -> list[str]:
    text = path.read_text()
    found = []
    for what, pattern in REFUSED.items():
        for match in pattern.finditer(text):
            line = text.count("\n", 0, match.start()) + 1
            found.append(f"{path.relative_to(root)}:{line}: {what}: {match.group(0)!r}")
    return found


def test_no_template_holds_inline_script_style_or_eval():
    templates = sorted((ROOT / "templates").rglob("*.html"))
    assert len(templates) > 40
    assert [offence for path in templates for offence in offences(path)] == []


def test_no_html_built_in_python_holds_inline_script_style_or_eval():
    sources = [
        path
        for app in APPS
        for path in sorted((ROOT / app).rglob("*.py"))
        if "migrations" not in path.parts
    ]
    assert len(sources) > 100
    assert [offence for path in sources for offence in offences(path)] == []


def test_the_check_finds_each_kind_of_offence(tmp_path):
    sample = tmp_path / "page.html"
    sample.write_text(
        "<script>alert(1)</script>\n<style>p {}</style>\n<p style='color: red'>\n"
        '<a onclick="x()">\n<a href="javascript:x()">\n<div hx-on::after-swap="x">\n'
        "<div hx-trigger=\"every 5s [visible]\">\n<div hx-vals='js:{a: 1}'>\n"
        '<script src="/static/a.js"></script><script type="application/json">{}</script>\n'
    )
    found = offences(sample, root=tmp_path)
    assert [offence.split(": ")[1] for offence in found] == list(REFUSED)
