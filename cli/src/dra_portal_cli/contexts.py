"""Where the CLI keeps its sign-ins: contexts like kubeconfig's (a name → server and token), one
of them current, in ``$XDG_CONFIG_HOME/dra-portal/config.yaml`` (``~/.config/...``) or the file
``DRA_PORTAL_CONFIG`` names. The file holds tokens, so it is written 0600 in a 0700 folder.

``DRA_PORTAL_SERVER`` and ``DRA_PORTAL_TOKEN`` override the file (CI jobs need no file at all).
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

__all__ = ["Context", "ContextError", "Store", "config_path"]


class ContextError(Exception):
    """No usable sign-in; the message says what to run."""


@dataclass(frozen=True)
class Context:
    name: str
    server: str
    token: str


def config_path() -> Path:
    named = os.environ.get("DRA_PORTAL_CONFIG")
    if named:
        return Path(named).expanduser()
    base = os.environ.get("XDG_CONFIG_HOME") or str(Path.home() / ".config")
    return Path(base) / "dra-portal" / "config.yaml"


class Store:
    def __init__(self, path: Path | None = None) -> None:
        self.path = path or config_path()
        self.data: dict[str, Any] = {"current-context": "", "contexts": {}}
        if self.path.exists():
            try:
                loaded = yaml.safe_load(self.path.read_text()) or {}
            except yaml.YAMLError as error:
                raise ContextError(f"{self.path} is not valid YAML: {error}") from error
            if not isinstance(loaded, dict) or not isinstance(loaded.get("contexts", {}), dict):
                raise ContextError(f"{self.path} is not a dra-portal configuration file.")
            self.data.update(loaded)

    @property
    def contexts(self) -> dict[str, dict[str, str]]:
        return self.data.setdefault("contexts", {})

    @property
    def current(self) -> str:
        return str(self.data.get("current-context") or "")

    def save(self) -> None:
        folder = self.path.parent
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        # Written whole and renamed: a crash never leaves half a file, and never a readable one.
        handle, temporary = tempfile.mkstemp(dir=folder, prefix=".config-", suffix=".yaml")
        try:
            os.fchmod(handle, 0o600)
            with os.fdopen(handle, "w") as out:
                yaml.safe_dump(self.data, out, sort_keys=False)
            os.replace(temporary, self.path)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise

    def put(self, name: str, server: str, token: str, *, make_current: bool = True) -> None:
        self.contexts[name] = {"server": server.rstrip("/"), "token": token}
        if make_current or not self.current:
            self.data["current-context"] = name
        self.save()

    def use(self, name: str) -> None:
        if name not in self.contexts:
            raise ContextError(self._unknown(name))
        self.data["current-context"] = name
        self.save()

    def remove(self, name: str) -> None:
        if name not in self.contexts:
            raise ContextError(self._unknown(name))
        del self.contexts[name]
        if self.current == name:
            self.data["current-context"] = next(iter(self.contexts), "")
        self.save()

    def resolve(self, name: str | None = None) -> Context:
        """The context to use: the environment's server/token, else ``name``, else the current."""
        server = os.environ.get("DRA_PORTAL_SERVER", "")
        token = os.environ.get("DRA_PORTAL_TOKEN", "")
        chosen = name or self.current
        if name and name not in self.contexts:
            raise ContextError(self._unknown(name))
        stored = self.contexts.get(chosen, {}) if chosen else {}
        server = server or stored.get("server", "")
        token = token or stored.get("token", "")
        if not server:
            raise ContextError(
                "Not signed in: run `dra-portal login --server URL` (or set DRA_PORTAL_SERVER "
                "and DRA_PORTAL_TOKEN)."
            )
        return Context(chosen or "(environment)", server, token)

    def _unknown(self, name: str) -> str:
        known = ", ".join(sorted(self.contexts)) or "none yet"
        return f"No context named {name} (contexts: {known})."
