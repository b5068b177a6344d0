"""Runs the test OpenID provider (``provider.mjs``, panva's oidc-provider) as its own process.

Its Node packages are installed by ``make test`` and CI (``npm ci`` in this folder); without
them the tests that need the provider skip, saying how to install them, unless
``REQUIRE_BROWSER=1`` (CI), which makes that a failure.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
import urllib.request
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parent
SCRIPT = HERE / "provider.mjs"
CLIENT_ID = "dra-portal"
CLIENT_SECRET = "test-client-secret-not-a-real-one-0123456789"  # noqa: S105
PASSWORD = "provider password"  # noqa: S105


def require_node_packages() -> str:
    """The ``node`` executable, once the provider's packages are installed; skips (or fails
    with ``REQUIRE_BROWSER=1``) with the reason otherwise."""
    node = shutil.which("node")
    reason = ""
    if node is None:
        reason = "Node.js is not installed (apt-get install nodejs npm)"
    elif not (HERE / "node_modules" / "oidc-provider").is_dir():
        reason = f"the test OpenID provider is not installed (cd {HERE} && npm ci)"
    if reason:
        if os.environ.get("REQUIRE_BROWSER", "") in ("1", "true", "yes"):
            pytest.fail(f"REQUIRE_BROWSER is set but {reason}")
        pytest.skip(reason)
    assert node is not None
    return node


class OpenIdProvider:
    """One provider process with one client (the portal at ``portal_url``) and ``users``:
    ``{username: {"groups": [...], "email": ..., "name": ...}}``, each with ``PASSWORD``."""

    def __init__(self, *, portal_url: str, users: dict[str, dict[str, Any]]) -> None:
        self.portal_url = portal_url.rstrip("/")
        self.users = users
        self.issuer = ""
        self._process: subprocess.Popen[str] | None = None
        self._config = ""
        self._log: Any = None

    def __enter__(self) -> OpenIdProvider:
        node = require_node_packages()
        config = {
            "clients": [
                {
                    "client_id": CLIENT_ID,
                    "client_secret": CLIENT_SECRET,
                    "redirect_uris": [f"{self.portal_url}/oidc/callback/"],
                    "post_logout_redirect_uris": [f"{self.portal_url}/login/"],
                }
            ],
            "users": {
                name: {"password": PASSWORD, "email": f"{name}@example.org", **user}
                for name, user in self.users.items()
            },
        }
        handle, self._config = tempfile.mkstemp(suffix=".json", prefix="oidc-provider-")
        with os.fdopen(handle, "w") as file:
            json.dump(config, file)
        self._log = tempfile.TemporaryFile(mode="w+")  # its warnings; read if it fails to start
        self._process = subprocess.Popen(
            [node, str(SCRIPT), self._config],
            cwd=HERE,
            stdout=subprocess.PIPE,
            stderr=self._log,
            text=True,
        )
        assert self._process.stdout is not None
        line = self._process.stdout.readline()  # the script prints its issuer once listening
        if not line:
            self._process.wait(timeout=10)
            self._log.seek(0)
            error = self._log.read()
            self.__exit__()
            raise RuntimeError(f"the test OpenID provider did not start: {error}")
        self.issuer = json.loads(line)["issuer"]
        return self

    def __exit__(self, *exc_info: object) -> None:
        if self._process is not None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
            if self._process.stdout is not None:
                self._process.stdout.close()
            self._log.close()
            self._process = None
        if self._config:
            Path(self._config).unlink(missing_ok=True)

    def authorizations(self) -> list[dict[str, str]]:
        """The query parameters of every authorization request the provider received."""
        with urllib.request.urlopen(f"{self.issuer}/_test/authorizations", timeout=10) as answer:
            result: list[dict[str, str]] = json.load(answer)
        return result

    def portal_settings(self) -> dict[str, Any]:
        """The portal's settings for this provider (apply with pytest-django's ``settings``)."""
        return {
            "OIDC_ISSUER": self.issuer,
            "OIDC_ENABLED": True,
            "OIDC_PROVIDER_NAME": "Test IdP",
            "OIDC_RP_CLIENT_ID": CLIENT_ID,
            "OIDC_RP_CLIENT_SECRET": CLIENT_SECRET,
            "OIDC_RP_SCOPES": "openid email profile groups",
        }
