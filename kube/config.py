"""How to reach a cluster: a `ClusterConfig` resolved into the `kubernetes` client's
configuration (kubeconfig, in-cluster service account, or a plain URL)."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import urllib3
from kubernetes import client as k8s_client
from kubernetes import config as k8s_config
from kubernetes.config.config_exception import ConfigException
from kubernetes.config.incluster_config import InClusterConfigLoader

from kube.errors import ClusterError

__all__ = [
    "SERVICE_ACCOUNT_DIR",
    "ClusterConfig",
    "ClusterVersion",
    "configure",
    "credentials_of",
    "parse_version",
]

SERVICE_ACCOUNT_DIR = "/var/run/secrets/kubernetes.io/serviceaccount"


@dataclass(frozen=True)
class ClusterConfig:
    """How to reach one cluster.

    Resolution when fields are unset: `server` (plain URL, no credentials: the emulator) →
    `in_cluster` → `kubeconfig` (+ `context`) → `$KUBECONFIG` → the in-cluster service account
    (when `KUBERNETES_SERVICE_HOST` is set) → `~/.kube/config`. The in-cluster service account
    is the `token` and `ca.crt` of `service_account_dir`.
    """

    name: str = "default"
    kubeconfig: str | None = None
    context: str | None = None
    in_cluster: bool = False
    server: str | None = None
    service_account_dir: str = SERVICE_ACCOUNT_DIR
    connect_timeout: float = 5.0
    read_timeout: float = 30.0
    watch_timeout_margin: float = 15.0  # read timeout of a watch = timeoutSeconds + this
    pool_size: int = 32
    # Sent as ``fieldValidation`` on every create, update and patch: with "Strict" a field the
    # server does not know fails the write (400) instead of being dropped with a warning.
    field_validation: str = "Strict"


@dataclass(frozen=True)
class ClusterVersion:
    git_version: str  # "v1.34.1"
    major: str  # "1"
    minor: str  # "34" (some providers answer "34+")
    version: str  # "1.34"


def parse_version(info: dict[str, Any]) -> ClusterVersion:
    git_version = str(info.get("gitVersion") or "")
    major, minor = str(info.get("major") or ""), str(info.get("minor") or "")
    match = re.match(r"v?(\d+)\.(\d+)", git_version)
    if match:
        short = f"{match.group(1)}.{match.group(2)}"
    else:
        short = f"{re.sub(r'[^0-9]', '', major)}.{re.sub(r'[^0-9]', '', minor)}"
    return ClusterVersion(git_version, major, minor, short)


def configure(config: ClusterConfig) -> k8s_client.Configuration:
    cfg = k8s_client.Configuration()
    try:
        if config.server:
            cfg.host = config.server.rstrip("/")
        elif config.in_cluster:
            _load_service_account(config, cfg)
        else:
            kubeconfig = config.kubeconfig or os.environ.get("KUBECONFIG")
            default = Path.home() / ".kube" / "config"
            if not kubeconfig and os.environ.get("KUBERNETES_SERVICE_HOST"):
                if (Path(config.service_account_dir) / "token").exists():
                    _load_service_account(config, cfg)
                    kubeconfig = None
                else:
                    kubeconfig = str(default)
            elif not kubeconfig:
                kubeconfig = str(default)
            if kubeconfig:
                k8s_config.load_kube_config(
                    config_file=kubeconfig,
                    context=config.context,
                    client_configuration=cfg,
                    persist_config=False,
                )
    except (ConfigException, OSError) as exc:
        raise ClusterError(f"cannot configure cluster {config.name!r}: {exc}") from exc
    # No silent retries of reads: the caller decides between relist and backoff. Connection
    # attempts are retried twice (a refused connect is cheap to retry).
    cfg.retries = urllib3.Retry(total=2, connect=2, read=0, redirect=0, status=0, other=0)
    cfg.connection_pool_maxsize = config.pool_size
    return cfg


def _load_service_account(config: ClusterConfig, cfg: k8s_client.Configuration) -> None:
    folder = Path(config.service_account_dir)
    InClusterConfigLoader(
        token_filename=str(folder / "token"), cert_filename=str(folder / "ca.crt")
    ).load_and_set(cfg)


def credentials_of(cfg: k8s_client.Configuration) -> tuple[Any, ...]:
    """What a configuration authenticates and verifies the server with: the server, the
    token (or basic auth), and the contents of the CA, client certificate and key files (a
    kubeconfig's embedded data is written to files named after it; in-cluster files keep their
    names when rotated)."""

    def contents(path: Any) -> bytes:
        try:
            return Path(path).read_bytes() if path else b""
        except OSError:
            return b""

    return (
        cfg.host,
        cfg.verify_ssl,
        getattr(cfg, "tls_server_name", None),
        cfg.proxy,
        tuple(sorted(cfg.api_key.items())),
        cfg.username,
        cfg.password,
        contents(cfg.ssl_ca_cert),
        contents(cfg.cert_file),
        contents(cfg.key_file),
    )
