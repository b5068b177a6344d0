"""Serving TLS and authenticating bearer tokens, as kube-apiserver does with
``--tls-cert-file``/``--tls-private-key-file`` and ``--token-auth-file`` (or service-account
tokens), so that tests can rotate a cluster's CA and tokens under a client.

What a request meets once the emulator has tokens (``Emulator(tokens=...)``):

- ``Authorization: Bearer <token>`` with a token it knows: served.
- A bearer token it does not know: ``401 Unauthorized`` (a Status whose message is
  "Unauthorized"), whatever the path: kube-apiserver tries anonymous access only for requests
  that present no credentials.
- No credentials: the anonymous user, who may read what the ``system:public-info-viewer``
  role allows (``/healthz``, ``/livez``, ``/readyz``, ``/version``); anything else is
  ``403 Forbidden``.

Without tokens every request is served, as before (plain-HTTP tests and the demo).
"""

from __future__ import annotations

import base64
import ssl
from dataclasses import dataclass
from pathlib import Path

from .errors import ApiError

__all__ = ["ServingCertificate", "authenticate"]

PUBLIC_PATHS = frozenset({"/healthz", "/livez", "/readyz", "/version"})


@dataclass(frozen=True)
class ServingCertificate:
    """The server's certificate and key (PEM files), and the CA certificate that signed it:
    what a client must trust (a kubeconfig's ``certificate-authority-data``)."""

    certfile: Path
    keyfile: Path
    ca_file: Path

    @classmethod
    def in_directory(cls, directory: str | Path) -> ServingCertificate:
        """``server.crt``, ``server.key`` and ``ca.crt`` of a directory."""
        folder = Path(directory)
        return cls(folder / "server.crt", folder / "server.key", folder / "ca.crt")

    def context(self) -> ssl.SSLContext:
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = ssl.TLSVersion.TLSv1_2
        context.load_cert_chain(self.certfile, self.keyfile)
        return context

    def ca_data(self) -> str:
        """The CA certificate, base64-encoded as a kubeconfig embeds it."""
        return base64.b64encode(self.ca_file.read_bytes()).decode("ascii")


def authenticate(
    authorization: str | None, tokens: frozenset[str] | None, method: str, path: str
) -> None:
    """Raises the ``ApiError`` kube-apiserver answers a request with these credentials, if
    any (see the module docstring)."""
    if tokens is None:
        return
    scheme, _, token = (authorization or "").strip().partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        if token.strip() in tokens:
            return
        raise ApiError(401, "Unauthorized", "Unauthorized")
    if path in PUBLIC_PATHS and method == "GET":
        return
    raise ApiError(
        403,
        "Forbidden",
        f'forbidden: User "system:anonymous" cannot {method.lower()} path "{path}"',
    )
