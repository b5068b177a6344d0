"""Typed readers for the process environment, used only by ``portal.settings``.

Every setting the portal reads from the environment goes through one of these helpers, so a
misspelt boolean or a non-numeric integer fails at start-up with a message naming the variable
instead of surfacing later as odd behaviour.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

__all__ = ["env_bool", "env_int", "env_list", "env_list_secret", "env_secret", "env_str"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def env_str(name: str, default: str = "") -> str:
    """The variable's value, or ``default`` when it is unset."""
    return os.environ.get(name, default)


def env_bool(name: str, default: bool = False) -> bool:
    """Reads 1/true/yes/on or 0/false/no/off (any case); anything else is a configuration error."""
    raw = os.environ.get(name)
    if raw is None:
        return default
    value = raw.strip().lower()
    if value in _TRUE:
        return True
    if value in _FALSE:
        return False
    raise ImproperlyConfigured(f"{name}={raw!r} is not a boolean (use true or false).")


def env_int(name: str, default: int) -> int:
    """An integer variable; a non-integer value is a configuration error."""
    raw = os.environ.get(name)
    if raw is None or raw.strip() == "":
        return default
    try:
        return int(raw)
    except ValueError:
        raise ImproperlyConfigured(f"{name}={raw!r} is not an integer.") from None


def env_list(name: str, default: list[str] | None = None) -> list[str]:
    """A comma-separated list; blanks around items and empty items are dropped."""
    raw = os.environ.get(name)
    if raw is None:
        return list(default or [])
    return [item.strip() for item in raw.split(",") if item.strip()]


def env_secret(name: str, default: str = "") -> str:
    """A secret from ``NAME`` or from the file named by ``NAME_FILE`` (Docker/Kubernetes secrets).

    Setting both is refused: it is ambiguous which one the operator meant.
    """
    file_name = os.environ.get(f"{name}_FILE")
    value = os.environ.get(name)
    if file_name and value:
        raise ImproperlyConfigured(f"Set {name} or {name}_FILE, not both.")
    if file_name:
        try:
            return Path(file_name).read_text().strip()
        except OSError as error:
            raise ImproperlyConfigured(
                f"{name}_FILE={file_name!r} cannot be read: {error}"
            ) from None
    return value if value is not None else default


def env_list_secret(name: str) -> list[str]:
    """Secrets from ``NAME`` or the file ``NAME_FILE`` (as :func:`env_secret`), separated by
    commas or whitespace (one per line in a file)."""
    return [item for item in re.split(r"[\s,]+", env_secret(name)) if item]
