"""`Emulator`: start, load, inspect and inject faults into the in-process API server."""

from __future__ import annotations

import json
import re
import socket
import threading
import time
import uuid
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import yaml

from dra.features import NEWEST_VERSION

from .credentials import ServingCertificate
from .errors import ApiError
from .faults import Fault
from .handler import Server
from .resources import (
    RESOURCES,
    by_kind,
)
from .store import Store

__all__ = ["Emulator", "Fault", "ServingCertificate"]

# kube-apiserver compacts etcd every 5 minutes (--etcd-compaction-interval): the watch
# history a client can resume from is about that long.
DEFAULT_HISTORY_WINDOW = 300.0
_SYSTEM_NAMESPACES = ("default", "kube-system", "kube-public", "kube-node-lease")


class Emulator:
    """An in-process Kubernetes API server for tests and the demo.

    Use as a context manager (`with Emulator(port=0) as emu: emu.url`) or call `start()` and
    `stop()`. All methods are thread-safe.
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 0,
        *,
        version: str | None = None,
        bookmark_interval: float = 60.0,
        history_limit: int | None = 500_000,
        require_namespaces: bool = True,
        system_namespaces: bool = True,
        initial_resource_version: int = 0,
        cluster_uid: str | None = None,
        garbage_collection_interval: float | None = 2.0,
        history_window: float | None = DEFAULT_HISTORY_WINDOW,
        tls: ServingCertificate | None = None,
        tokens: Iterable[str] | None = None,
        verbose: bool = False,
    ) -> None:
        """``initial_resource_version`` starts the history there (a restarted cluster may
        start below what its clients saw); ``cluster_uid`` is the uid of ``kube-system``, the
        cluster's identity (random unless given; keep it to emulate the same cluster).
        ``version`` is what ``/version`` reports (``"1.35"`` or ``"v1.35.2"``); by default the
        newest Kubernetes the allocator knows (``dra.features.NEWEST_VERSION``).
        ``garbage_collection_interval``: seconds between passes of the garbage collector that
        deletes objects whose owners are gone, as kube-controller-manager's does within
        seconds (``None``: never; ``collect_garbage()`` runs one pass on demand).
        ``history_window``: seconds of watch history kept, as kube-apiserver's etcd
        compaction (every 5 minutes by default) keeps: a watch, exact list or continue token
        from a resourceVersion older than that answers 410 (``None``: history is kept until
        ``history_limit`` events or a test's ``compact()``).
        ``tls``: serve HTTPS with this certificate; ``tokens``: the bearer tokens it accepts
        (``None``: every request is served; see ``apiemulator.credentials``)."""
        self.host = host
        self.tls = tls
        self.tokens: frozenset[str] | None = None if tokens is None else frozenset(tokens)
        self.requested_port = port
        self.git_version = _git_version(version)
        self.bookmark_interval = bookmark_interval
        self.verbose = verbose
        self._history_limit = history_limit
        self._require_namespaces = require_namespaces
        self._system_namespaces = system_namespaces
        self._faults: list[Fault] = []
        self._faults_lock = threading.Lock()
        self._active_watches = 0
        self._server: Server | None = None
        self._thread: threading.Thread | None = None
        self.garbage_collection_interval = garbage_collection_interval
        self.history_window = history_window
        self._collector: threading.Thread | None = None
        self._stopping = threading.Event()
        self.store = self._new_store(initial_resource_version, cluster_uid)

    def _new_store(self, initial_resource_version: int, cluster_uid: str | None) -> Store:
        store = Store(
            history_limit=self._history_limit,
            require_namespaces=self._require_namespaces,
            initial_resource_version=initial_resource_version,
        )
        if self._system_namespaces:
            for name in _SYSTEM_NAMESPACES:
                meta = {"name": name}
                if name == "kube-system":
                    meta["uid"] = cluster_uid or str(uuid.uuid4())
                store.create(by_kind["Namespace"], None, {"metadata": meta}, keep_identity=True)
        return store

    @property
    def cluster_uid(self) -> str:
        """The uid of the ``kube-system`` namespace: what clients take as the cluster's
        identity ("" without system namespaces)."""
        try:
            entry = self.store.get(by_kind["Namespace"], None, "kube-system")
        except ApiError:
            return ""
        return str(entry.obj["metadata"].get("uid") or "")

    def replace_cluster(
        self, *, resource_version: int | None = None, cluster_uid: str | None = None
    ) -> str:
        """Emulates another cluster behind the same address: every object and all history
        go, ``kube-system`` gets a new uid, open watches end abruptly. Its history starts at
        ``resource_version`` (default: where this one was). Returns the new cluster's uid."""
        old = self.store
        start = old.rv if resource_version is None else resource_version
        self.store = self._new_store(start, cluster_uid)
        old.close_watches()
        return self.cluster_uid

    def restart(self, *, keep: socket.socket | None = None) -> int:
        """Emulates a kube-apiserver restart over the same etcd: every object and the
        resourceVersion counter stay, but the new watch cache knows no history, so a watch
        or an exact list from any earlier resourceVersion answers 410; every open
        connection (watches included; but ``keep``, the one asking) is dropped. Returns the
        resourceVersion it restarted at."""
        version = self.store.compact()
        self.store.close_watches()
        if self._server is not None:
            self._server.close_connections(keep=keep)
        return version

    # -- lifecycle --------------------------------------------------------------------------

    def start(self) -> Emulator:
        if self._server is None:
            self._server = Server((self.host, self.requested_port), self)
            self._server.tls = self.tls.context() if self.tls is not None else None
            self._thread = threading.Thread(
                target=self._server.serve_forever,
                kwargs={"poll_interval": 0.02},
                name=f"apiemulator:{self.port}",
                daemon=True,
            )
            self._thread.start()
            if self.garbage_collection_interval is not None or self.history_window is not None:
                self._stopping.clear()
                self._collector = threading.Thread(
                    target=self._maintain_forever,
                    name=f"apiemulator-gc:{self.port}",
                    daemon=True,
                )
                self._collector.start()
        return self

    def collect_garbage(self) -> list[tuple[str, str, str]]:
        """One garbage-collection pass now: ``(kind, namespace, name)`` of what it deleted."""
        return self.store.collect_garbage()

    def _maintain_forever(self) -> None:
        """What the control plane does in the background: garbage collection every
        ``garbage_collection_interval`` seconds, compaction of history older than
        ``history_window`` (checked every second: what it drops is at most a second late)."""
        collect = self.garbage_collection_interval
        tick = min(max(float(collect), 0.05), 1.0) if collect is not None else 1.0
        next_collection = time.monotonic() + (collect or 0)
        # A pass reads every object under the store's lock: with nothing written since the
        # version the last one started at (its own deletions count: they may orphan more), it
        # would find nothing, so it is skipped.
        collected_at: tuple[Store, int] | None = None
        while not self._stopping.wait(tick):
            if collect is not None and time.monotonic() >= next_collection:
                store = self.store
                if collected_at != (store, store.rv):
                    started_at = (store, store.rv)
                    self.collect_garbage()
                    collected_at = started_at
                next_collection = time.monotonic() + max(float(collect), 0.05)
            if self.history_window is not None:
                self.store.compact_older_than(self.history_window)

    def stop(self) -> None:
        """Stop serving: end every watch stream, close connections, join handler threads."""
        server, self._server = self._server, None
        if server is None:
            return
        self._stopping.set()
        if self._collector is not None:
            self._collector.join(5.0)
            self._collector = None
        self.store.close()
        server.shutdown()
        server.close_connections()
        server.join_threads(5.0)
        server.server_close()
        if self._thread is not None:
            self._thread.join(5.0)

    def go_away(self) -> None:
        """The API server goes down: every connection, watches included, is closed and new
        ones are refused, as from a stopped kube-apiserver. Every object is kept;
        :meth:`come_back` serves them again on the same port."""
        self.requested_port = self.port
        self.stop()

    def come_back(self) -> None:
        """Serves again after :meth:`go_away`, as a kube-apiserver restarted over the same
        etcd (see :meth:`restart`: the objects and the resourceVersion counter stay, the
        watch history does not)."""
        self.store.reopen()
        self.store.compact()
        self.start()

    def __enter__(self) -> Emulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            return self.requested_port
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"{'https' if self.tls is not None else 'http'}://{self.host}:{self.port}"

    def use_tls(self, tls: ServingCertificate | None) -> None:
        """Serve with another certificate (``None``: plain HTTP) from the next connection on,
        as a control plane replaced or restarted with a new CA: open connections are dropped,
        so clients connect again and meet it."""
        self.tls = tls
        if self._server is not None:
            self._server.tls = tls.context() if tls is not None else None
            self._server.close_connections()

    def use_tokens(self, tokens: Iterable[str] | None) -> None:
        """Accept these bearer tokens from the next request on (``None``: no authentication),
        as after a rotation of the service-account signing key."""
        self.tokens = None if tokens is None else frozenset(tokens)

    def kubeconfig(
        self, path: str | Path, *, namespace: str = "default", token: str | None = None
    ) -> Path:
        """Write a kubeconfig (context "emulator": its URL, the CA when serving TLS, ``token``
        when given) and return it."""
        cluster: dict[str, Any] = {"server": self.url}
        if self.tls is not None:
            cluster["certificate-authority-data"] = self.tls.ca_data()
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "emulator", "cluster": cluster}],
            "users": [{"name": "emulator", "user": {"token": token} if token else {}}],
            "contexts": [
                {
                    "name": "emulator",
                    "context": {"cluster": "emulator", "user": "emulator", "namespace": namespace},
                }
            ],
            "current-context": "emulator",
            "preferences": {},
        }
        target = Path(path)
        target.write_text(yaml.safe_dump(config, sort_keys=False))
        return target

    def version_info(self) -> dict[str, str]:
        match = re.match(r"v?(\d+)\.(\d+)", self.git_version)
        major, minor = match.groups() if match else map(str, NEWEST_VERSION)
        return {
            "major": major,
            "minor": minor,
            "gitVersion": self.git_version,
            "gitCommit": "0000000000000000000000000000000000000000",
            "gitTreeState": "clean",
            "buildDate": "2025-09-09T00:00:00Z",
            "goVersion": "go1.24.6",
            "compiler": "gc",
            "platform": "linux/amd64",
        }

    # -- data -------------------------------------------------------------------------------

    @property
    def resource_version(self) -> int:
        return self.store.rv

    def load(
        self,
        objects: Iterable[dict[str, Any]],
        *,
        create_namespaces: bool = True,
        create_nodes: bool = True,
        copy_objects: bool = True,
    ) -> int:
        """Create (or replace) objects, keeping their uid, timestamps and status.

        Missing namespaces are created, and so are the Nodes ResourceSlices run on. A loaded
        `kube-system` namespace keeps this emulator's uid: the identity is the emulator's.
        Returns the number of objects given (created namespaces and nodes not counted).
        `copy_objects=False` lets the store own (and modify) the given dicts.
        """
        identity = self.cluster_uid

        def keep_identity(obj: dict[str, Any]) -> dict[str, Any]:
            meta = obj.get("metadata") or {}
            if identity and obj.get("kind") == "Namespace" and meta.get("name") == "kube-system":
                return {**obj, "metadata": {**meta, "uid": identity}}
            return obj

        return self.store.load(
            (keep_identity(obj) for obj in objects),
            create_namespaces=create_namespaces,
            create_nodes=create_nodes,
            copy_objects=copy_objects,
        )

    def load_files(self, *paths: str | Path | Iterable[str | Path]) -> int:
        """Load kubectl `List` JSON (or YAML) files; a directory loads its *.json/*.yaml."""
        files: list[Path] = []
        for item in paths:
            for p in [item] if isinstance(item, str | Path) else item:
                p = Path(p)
                if p.is_dir():
                    files.extend(
                        sorted(f for f in p.iterdir() if f.suffix in (".json", ".yaml", ".yml"))
                    )
                else:
                    files.append(p)
        objects: list[dict[str, Any]] = []
        for f in files:
            text = f.read_text()
            docs = [json.loads(text)] if f.suffix == ".json" else list(yaml.safe_load_all(text))
            for doc in docs:
                if isinstance(doc, dict) and doc.get("kind", "").endswith("List"):
                    objects.extend(doc.get("items") or [])
                elif doc:
                    objects.append(doc)
        return self.load(objects, copy_objects=False)

    def objects(self, kind: str) -> list[dict[str, Any]]:
        """Copies of the stored objects of one kind (e.g. "ResourceClaim")."""
        return self.store.dump(by_kind[kind])

    def state(self) -> dict[str, Any]:
        return {
            "clusterUID": self.cluster_uid,
            "resourceVersion": str(self.store.rv),
            "compactedResourceVersion": str(self.store.compacted_rv),
            "activeWatches": self._active_watches,
            "counts": {r.plural: self.store.count(r) for r in RESOURCES.values()},
        }

    # -- fault injection --------------------------------------------------------------------

    def compact(self) -> int:
        """Forget history up to now; older watches get ERROR 410, older continues HTTP 410."""
        return self.store.compact()

    def close_watches(self) -> int:
        """End every active watch stream abruptly (no terminating chunk)."""
        count = self._active_watches
        self.store.close_watches()
        return count

    def add_fault(self, fault: Fault) -> None:
        if fault.action not in ("error", "drop", "latency"):
            raise ValueError(f"unknown fault action {fault.action!r}")
        with self._faults_lock:
            self._faults.append(fault)

    def fail_next(
        self,
        count: int = 1,
        *,
        status: int = 500,
        path: str | None = None,
        method: str | None = None,
    ) -> None:
        """Answer the next `count` matching requests with `status` and a Status body."""
        self.add_fault(Fault("error", count, path, method, status=status))

    def drop_next(
        self,
        count: int = 1,
        *,
        path: str | None = None,
        method: str | None = None,
        after_events: int = 0,
    ) -> None:
        """Close the connection of the next `count` matching requests without an answer."""
        self.add_fault(Fault("drop", count, path, method, after_events=after_events))

    def add_latency(
        self,
        seconds: float,
        *,
        count: int | None = None,
        path: str | None = None,
        method: str | None = None,
    ) -> None:
        """Delay matching requests by `seconds` (all of them until cleared when count=None)."""
        self.add_fault(Fault("latency", count, path, method, seconds=seconds))

    def clear_faults(self) -> None:
        with self._faults_lock:
            self._faults.clear()

    def faults(self) -> list[Fault]:
        with self._faults_lock:
            return list(self._faults)

    def _take_fault(self, method: str, path: str) -> Fault | None:
        delay = 0.0
        chosen: Fault | None = None
        with self._faults_lock:
            for fault in list(self._faults):
                if not fault.matches(method, path):
                    continue
                if fault.action == "latency":
                    delay += fault.seconds
                elif chosen is None:
                    chosen = fault
                else:
                    continue
                if fault.count is not None:
                    fault.count -= 1
                    if fault.count <= 0:
                        self._faults.remove(fault)
        if delay:
            time.sleep(delay)
        return chosen

    def _watch_started(self) -> None:
        with self._faults_lock:
            self._active_watches += 1

    def _watch_ended(self) -> None:
        with self._faults_lock:
            self._active_watches -= 1


def _git_version(version: str | None) -> str:
    """``None`` → the newest version the allocator knows; ``"1.35"`` → ``"v1.35.0"``."""
    if version is None:
        return "v{}.{}.0".format(*NEWEST_VERSION)
    version = version if version.startswith("v") else f"v{version}"
    return version if version.count(".") >= 2 else f"{version}.0"
