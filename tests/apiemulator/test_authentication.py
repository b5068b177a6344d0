"""The emulator serving TLS and authenticating bearer tokens as kube-apiserver does."""

from __future__ import annotations

import http.client
import json
import ssl

import pytest
import yaml

from apiemulator import Emulator
from tests.pki import FIRST, SECOND


def trusting(ca) -> ssl.SSLContext:
    return ssl.create_default_context(cafile=str(ca.ca_file))


def get(emulator: Emulator, path: str, token: str | None = None, ca=FIRST):
    connection = http.client.HTTPSConnection(
        emulator.host, emulator.port, context=trusting(ca), timeout=5
    )
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    try:
        connection.request("GET", path, headers=headers)
        response = connection.getresponse()
        return response.status, json.loads(response.read() or b"null")
    finally:
        connection.close()


@pytest.fixture
def emulator():
    with Emulator(port=0, tls=FIRST, tokens={"good"}) as emu:
        yield emu


def test_it_serves_https_with_its_certificate(emulator):
    assert emulator.url.startswith("https://")
    status, body = get(emulator, "/api/v1/namespaces", token="good")
    assert status == 200
    assert body["kind"] == "NamespaceList"


def test_a_client_trusting_another_ca_cannot_connect(emulator):
    with pytest.raises(ssl.SSLCertVerificationError):
        get(emulator, "/version", ca=SECOND)


def test_an_unknown_token_is_unauthorized_as_kube_apiserver_answers(emulator):
    assert get(emulator, "/api/v1/namespaces", token="stale") == (
        401,
        {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": "Unauthorized",
            "reason": "Unauthorized",
            "code": 401,
        },
    )
    assert get(emulator, "/version", token="stale")[0] == 401  # bad credentials are never anonymous


def test_without_credentials_only_public_information_is_served(emulator):
    assert get(emulator, "/version")[0] == 200
    status, body = get(emulator, "/api/v1/namespaces")
    assert status == 403
    assert body["reason"] == "Forbidden"
    assert 'User "system:anonymous"' in body["message"]


def test_new_certificate_and_tokens_apply_from_the_next_connection(emulator):
    emulator.use_tls(SECOND)
    emulator.use_tokens({"better"})
    assert get(emulator, "/api/v1/namespaces", token="better", ca=SECOND)[0] == 200
    assert get(emulator, "/api/v1/namespaces", token="good", ca=SECOND)[0] == 401


def test_the_kubeconfig_names_its_ca_and_the_token_given(emulator, tmp_path):
    config = yaml.safe_load(emulator.kubeconfig(tmp_path / "kubeconfig", token="good").read_text())
    assert config["clusters"][0]["cluster"]["server"] == emulator.url
    assert config["clusters"][0]["cluster"]["certificate-authority-data"] == FIRST.ca_data()
    assert config["users"][0]["user"] == {"token": "good"}
