"""The test PKI: two control planes ("first", "second"), each with its own CA and a serving
certificate for 127.0.0.1 / localhost signed by it.

Made with ``openssl`` once per test process in a temporary folder, so no private key lives in
the repository. The CA keys are thrown away as soon as the serving certificates are signed.
"""

import atexit
import shutil
import subprocess
import tempfile
from pathlib import Path

from apiemulator import ServingCertificate

__all__ = ["FIRST", "SECOND"]

_EXTENSIONS = """\
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost
authorityKeyIdentifier=keyid
subjectKeyIdentifier=hash
"""


def _openssl(*args: str, stdin: str | None = None) -> None:
    subprocess.run(  # noqa: S603 - fixed arguments, test-only
        ["openssl", *args], check=True, capture_output=True, input=stdin, text=True
    )


def _control_plane(folder: Path, name: str) -> ServingCertificate:
    folder.mkdir()
    ec = ("-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes")
    _openssl(
        "req", "-x509", *ec, "-days", "2", "-subj", f"/CN=kubernetes-ca-{name}",
        "-keyout", str(folder / "ca.key"), "-out", str(folder / "ca.crt"),
        "-addext", "basicConstraints=critical,CA:TRUE",
        "-addext", "keyUsage=critical,keyCertSign,cRLSign",
    )  # fmt: skip
    _openssl(
        "req", *ec, "-subj", "/CN=kube-apiserver",
        "-keyout", str(folder / "server.key"), "-out", str(folder / "server.csr"),
    )  # fmt: skip
    _openssl(
        "x509", "-req", "-in", str(folder / "server.csr"),
        "-CA", str(folder / "ca.crt"), "-CAkey", str(folder / "ca.key"), "-CAcreateserial",
        "-days", "2", "-out", str(folder / "server.crt"), "-extfile", "/dev/stdin",
        stdin=_EXTENSIONS,
    )  # fmt: skip
    for leftover in ("server.csr", "ca.key", "ca.srl"):
        (folder / leftover).unlink(missing_ok=True)
    return ServingCertificate.in_directory(folder)


_ROOT = Path(tempfile.mkdtemp(prefix="dra-portal-pki-"))
atexit.register(shutil.rmtree, _ROOT, ignore_errors=True)
FIRST = _control_plane(_ROOT / "first", "first")
SECOND = _control_plane(_ROOT / "second", "second")
