"""How answers are printed: ``-o table`` (the default), ``wide`` (more columns), ``json`` and
``yaml`` (the API's objects as they are, for scripts), and ``csv`` where a command says so."""

from __future__ import annotations

import csv
import json
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import click
import yaml
from rich.console import Console

__all__ = [
    "Column",
    "FORMATS",
    "bytes_text",
    "console",
    "emit",
    "error_console",
    "holders",
    "plain",
]

FORMATS = ("table", "wide", "json", "yaml")
console = Console(soft_wrap=True)
error_console = Console(stderr=True, soft_wrap=True)


@dataclass(frozen=True)
class Column:
    title: str
    value: Callable[[dict[str, Any]], Any]
    wide_only: bool = False
    justify: str = "left"


def plain(answer: Any) -> dict[str, Any]:
    """An API answer (a typed dictionary) as the plain mapping the printers take."""
    return cast(dict[str, Any], answer)


def bytes_text(value: int | None) -> str:
    """640Gi, 80G, 1.5Ti: the shortest readable binary size (blank: none)."""
    if value is None:
        return "-"
    for suffix, size in (("Pi", 2**50), ("Ti", 2**40), ("Gi", 2**30), ("Mi", 2**20), ("Ki", 2**10)):
        if value >= size:
            amount = value / size
            return f"{amount:.0f}{suffix}" if amount == int(amount) else f"{amount:.1f}{suffix}"
    return str(value)


def holders(device: dict[str, Any]) -> str:
    names = [holder.get("claim") or "(another tenant)" for holder in device.get("held_by") or []]
    return ", ".join(dict.fromkeys(names)) or "-"


def _text(value: Any) -> str:
    if value is None or value == "":
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, list | tuple):
        return ", ".join(_text(item) for item in value) or "-"
    return str(value)


def emit(
    output: str,
    items: Sequence[dict[str, Any]] | dict[str, Any],
    columns: Sequence[Column] = (),
    *,
    total: int | None = None,
    empty: str = "Nothing found.",
    raw: Any = None,
) -> None:
    """Print ``items`` (a list, or one object) as ``output`` asks. ``raw`` is what json/yaml
    print when it is not ``items`` itself; ``total`` adds a "showing N of M" line to tables."""
    data = items if raw is None else raw
    if output == "json":
        click.echo(json.dumps(data, indent=2, ensure_ascii=False))
        return
    if output == "yaml":
        click.echo(yaml.safe_dump(data, sort_keys=False, allow_unicode=True).rstrip())
        return
    rows = [items] if isinstance(items, dict) else list(items)
    if output == "csv":
        writer = csv.writer(sys.stdout)
        writer.writerow([column.title for column in columns])
        for row in rows:
            writer.writerow([_text(column.value(row)) for column in columns])
        return
    if not rows:
        console.print(empty)
        return
    shown = [c for c in columns if output == "wide" or not c.wide_only]
    cells = [[_text(column.value(row)) for column in shown] for row in rows]
    # Plain columns as kubectl prints them: never truncated, easy to cut and grep.
    widths = [
        max(len(column.title), *(len(line[index]) for line in cells))
        for index, column in enumerate(shown)
    ]

    def line(values: list[str]) -> str:
        padded = [
            value.rjust(width) if column.justify == "right" else value.ljust(width)
            for value, width, column in zip(values, widths, shown, strict=True)
        ]
        return "  ".join(padded).rstrip()

    click.echo(line([column.title for column in shown]))
    for values in cells:
        click.echo(line(values))
    if total is not None and total > len(rows):
        console.print(f"[dim]Showing {len(rows)} of {total}: --limit N for more, --all for all.[/]")
