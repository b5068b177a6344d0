"""Credentials and CAs rotate: a long-lived client whose token is refused, or whose TLS
handshake fails, reads its configuration (kubeconfig, in-cluster token and CA files) again and
goes on with the new one at once; with nothing new it says which failure it met.

The emulator serves HTTPS with the test PKI (``tests/pki``) and accepts bearer tokens as
kube-apiserver does.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from apiemulator import Emulator
from kube.client import Cluster
from kube.config import ClusterConfig
from kube.errors import TLSFailure, Unauthorized
from kube.kinds import Kind
from tests.pki import FIRST, SECOND

Source = Callable[[str], ClusterConfig]


@pytest.fixture
def emulator() -> Iterator[Emulator]:
    with Emulator(port=0, tls=FIRST, tokens={"first-token"}) as emu:
        yield emu


@pytest.fixture(params=["kubeconfig", "in-cluster"])
def configured(request, emulator: Emulator, tmp_path: Path, monkeypatch) -> Source:
    """``configured(token)``: writes the configuration (a kubeconfig, or a pod's
    service-account token and CA files) for ``token`` and the CA the emulator now serves, as
    its source would after a rotation; returns the ClusterConfig that reads it."""

    def write(token: str) -> ClusterConfig:
        if request.param == "kubeconfig":
            path = emulator.kubeconfig(tmp_path / "kubeconfig", token=token)
            return ClusterConfig(kubeconfig=str(path), read_timeout=5)
        monkeypatch.setenv("KUBERNETES_SERVICE_HOST", emulator.host)
        monkeypatch.setenv("KUBERNETES_SERVICE_PORT", str(emulator.port))
        (tmp_path / "token").write_text(token)
        (tmp_path / "ca.crt").write_bytes(emulator.tls.ca_file.read_bytes())
        return ClusterConfig(in_cluster=True, service_account_dir=str(tmp_path), read_timeout=5)

    return write


def test_a_rotated_token_is_read_again_when_the_old_one_is_refused(emulator, configured):
    with Cluster(configured("first-token")) as cluster:
        assert cluster.get(Kind.NAMESPACES, "default")
        emulator.use_tokens({"second-token"})
        configured("second-token")
        assert cluster.get(Kind.NAMESPACES, "default")  # the same client, at once


def test_a_control_plane_back_with_a_new_ca_is_trusted_once_the_configuration_says_so(
    emulator, configured
):
    with Cluster(configured("first-token")) as cluster:
        before = cluster.identity()
        emulator.replace_cluster()
        emulator.use_tls(SECOND)
        emulator.use_tokens({"second-token"})
        configured("second-token")
        after = cluster.identity()
        assert after and after != before


def test_refused_credentials_with_nothing_new_to_read_are_unauthorized(emulator, configured):
    with Cluster(configured("first-token")) as cluster:
        emulator.use_tokens({"second-token"})
        with pytest.raises(Unauthorized):
            cluster.list_page(Kind.NODES)


def test_an_untrusted_server_with_nothing_new_to_read_is_a_tls_failure(emulator, configured):
    with Cluster(configured("first-token")) as cluster:
        emulator.use_tls(SECOND)
        with pytest.raises(TLSFailure, match="CERTIFICATE_VERIFY_FAILED"):
            cluster.list_page(Kind.NODES)
