"""``manage.py allocate`` over a stream of lines, shared by the Django command and manage.py.

The command reads no app, model or database, yet ``django.setup()`` imports every app with
Celery, the cluster client and the database driver: about 1.7 s of CPU, more than the whole
allocation of a cold 5,000-node case. So ``manage.py allocate`` with only ``--input`` and
``--timeout`` runs here without starting Django (:func:`run_without_django`); any other
arguments (``--help``, Django's own options, a malformed value) go to the Django command, which
answers them as before and shares :func:`answer_lines`. This module imports no Django.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

from dra.allocator.lines import answer_line
from dra.allocator.search import DEFAULT_TIMEOUT_SECONDS

__all__ = ["answer_lines", "run_without_django"]

_OPTIONS = ("--input", "--timeout")


def answer_lines(
    path: str | None, timeout: float, write: Callable[[str], object], flush: Callable[[], object]
) -> None:
    """Answer each non-blank line of the file at ``path`` (stdin when empty), in order."""
    stream = open(path, encoding="utf-8") if path else sys.stdin  # noqa: SIM115
    try:
        for line in stream:
            if not line.strip():
                continue
            write(answer_line(line, timeout))
            flush()
    finally:
        if path:
            stream.close()


def _plain_options(arguments: list[str]) -> dict[str, str] | None:
    """``--input``/``--timeout`` values when the arguments hold nothing else, else None."""
    options: dict[str, str] = {}
    position = 0
    while position < len(arguments):
        name, equals, value = arguments[position].partition("=")
        if name not in _OPTIONS:
            return None
        if not equals:
            position += 1
            if position == len(arguments):
                return None
            value = arguments[position]
        if value.startswith("-"):
            return None  # argparse may read it as an option: let the command decide
        options[name] = value
        position += 1
    return options


def run_without_django(arguments: list[str]) -> bool:
    """Run ``allocate`` with these arguments (those after the command name) if they are only
    ``--input`` and ``--timeout`` with valid values; False, having done nothing, otherwise."""
    options = _plain_options(arguments)
    if options is None:
        return False
    timeout = DEFAULT_TIMEOUT_SECONDS
    if "--timeout" in options:
        try:
            timeout = float(options["--timeout"])
        except ValueError:
            return False
    stdout = sys.stdout
    answer_lines(
        options.get("--input"), timeout, lambda text: stdout.write(text + "\n"), stdout.flush
    )
    return True
