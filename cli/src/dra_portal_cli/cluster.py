"""``devices``, ``nodes`` and ``classes``: the mirrored cluster."""

from __future__ import annotations

from typing import Any

import click

from dra_portal_cli import output
from dra_portal_cli.app import (
    EXIT_USAGE,
    Session,
    cli,
    fail,
    list_options,
    output_option,
    pass_session,
    session_format,
)
from dra_portal_cli.output import Column, bytes_text, emit, holders, plain

# --- the cluster -----------------------------------------------------------------------------

DEVICE_COLUMNS = [
    Column("NODE", lambda d: d.get("node_name")),
    Column("DEVICE", lambda d: d.get("name")),
    Column("MODEL", lambda d: d.get("model_name")),
    Column("MEMORY", lambda d: bytes_text(d.get("memory_bytes")), justify="right"),
    Column("STATE", lambda d: d.get("state")),
    Column("HELD BY", holders),
    Column("DRIVER", lambda d: d.get("driver"), wide_only=True),
    Column("POOL", lambda d: d.get("pool"), wide_only=True),
    Column("UUID", lambda d: d.get("uuid"), wide_only=True),
    Column("PCIE ROOT", lambda d: d.get("pcie_root"), wide_only=True),
]
NODE_COLUMNS = [
    Column("NAME", lambda n: n.get("name")),
    Column("READY", lambda n: n.get("is_ready")),
    Column("DEVICES", lambda n: n.get("device_count"), justify="right"),
    Column("FREE", lambda n: n.get("free_count"), justify="right"),
    Column("ALLOCATED", lambda n: n.get("allocated_count"), justify="right"),
    Column("SHARED", lambda n: n.get("shared_count"), justify="right"),
    Column("BLOCKED", lambda n: n.get("blocked_count"), wide_only=True, justify="right"),
    Column("TAINTED", lambda n: n.get("tainted_count"), wide_only=True, justify="right"),
    Column("SCHEDULABLE", lambda n: n.get("is_schedulable"), wide_only=True),
    Column("PROBLEMS", lambda n: n.get("problems"), wide_only=True),
]
CLASS_COLUMNS = [
    Column("NAME", lambda c: c.get("name")),
    Column("DRIVERS", lambda c: c.get("drivers")),
    Column("MATCHING", lambda c: c.get("matching_device_count"), justify="right"),
    Column("FREE", lambda c: c.get("free_device_count"), justify="right"),
    Column("SELECTORS", lambda c: c.get("selectors"), wide_only=True),
    Column("PROBLEMS", lambda c: c.get("problems"), wide_only=True),
]


@cli.group()
def devices() -> None:
    """Devices in the mirrored cluster."""


@devices.command("list")
@click.option("--node", help="On this node.")
@click.option("--class", "device_class", help="Matching this DeviceClass.")
@click.option("--driver", help="Published by this driver.")
@click.option("--model", help="This model (e.g. 'NVIDIA H100 80GB HBM3').")
@click.option("--state", type=click.Choice(["free", "allocated", "shared", "blocked", "tainted"]))
@click.option("-q", "--search", help="Search names, models, UUIDs.")
@list_options
@output_option()
@pass_session
def devices_list(
    session: Session,
    node: str | None,
    device_class: str | None,
    driver: str | None,
    model: str | None,
    state: str | None,
    search: str | None,
    limit: int,
    fetch_all: bool,
    output_format: str | None,
) -> None:
    """List devices, with filters.

    \b
    Examples:
      dra-portal devices list --class gpu.nvidia.com --state free
      dra-portal devices list --node dgx-h100-01 -o wide
      dra-portal devices list --all -o json > devices.json
    """
    found, count = session.client.devices(
        limit=None if fetch_all else limit,
        node=node,
        device_class=device_class,
        driver=driver,
        model=model,
        state=state,
        q=search,
    )
    emit(
        session_format(session, output_format),
        [dict(d) for d in found],
        DEVICE_COLUMNS,
        total=count,
        empty="No devices match.",
    )


@devices.command("get")
@click.argument("key")
@output_option()
@pass_session
def devices_get(session: Session, key: str, output_format: str | None) -> None:
    """One device, as DRIVER/POOL/DEVICE (e.g. gpu.nvidia.com/dgx-h100-01/gpu-0)."""
    if key.count("/") < 2:
        fail(f"Name a device as DRIVER/POOL/DEVICE, not '{key}'.", EXIT_USAGE)
    device = plain(session.client.device(key))
    chosen = session_format(session, output_format)
    emit(
        chosen if chosen in ("json", "yaml") else "yaml" if chosen == "wide" else "table",
        device,
        DEVICE_COLUMNS if chosen == "table" else (),
    )
    if chosen == "table":
        _print_mapping("Attributes", device.get("attributes") or {})
        _print_mapping("Capacity", device.get("capacity") or {})


def _print_mapping(title: str, values: dict[str, Any]) -> None:
    if not values:
        return
    output.console.print(f"\n[bold]{title}[/]")
    for key, value in sorted(values.items()):
        if isinstance(value, dict) and len(value) == 1:
            value = next(iter(value.values()))
        output.console.print(f"  {key}: {value}", highlight=False)


@cli.group()
def nodes() -> None:
    """Nodes with devices."""


@nodes.command("list")
@click.option("-q", "--search", help="Search node names.")
@click.option("--ready/--not-ready", default=None, help="Only ready (or not ready) nodes.")
@list_options
@output_option()
@pass_session
def nodes_list(
    session: Session,
    search: str | None,
    ready: bool | None,
    limit: int,
    fetch_all: bool,
    output_format: str | None,
) -> None:
    """List nodes and their device counts.

    \b
    Examples:
      dra-portal nodes list
      dra-portal nodes list --not-ready -o wide
    """
    found, count = session.client.nodes(
        limit=None if fetch_all else limit,
        q=search,
        ready=None if ready is None else str(ready).lower(),
    )
    emit(
        session_format(session, output_format),
        [dict(n) for n in found],
        NODE_COLUMNS,
        total=count,
        empty="No nodes match.",
    )


@nodes.command("get")
@click.argument("name")
@output_option()
@pass_session
def nodes_get(session: Session, name: str, output_format: str | None) -> None:
    """One node with its GPUs.

    \b
    Example:
      dra-portal nodes get dgx-h100-01
    """
    node = plain(session.client.node(name))
    chosen = session_format(session, output_format)
    if chosen in ("json", "yaml"):
        emit(chosen, node)
        return
    emit("wide", node, NODE_COLUMNS)
    gpus = node.get("gpus") or []
    if gpus:
        output.console.print()
        emit(
            "table",
            gpus,
            [
                Column("GPU", lambda g: g.get("name") or g.get("device")),
                Column("MODEL", lambda g: g.get("model_name") or g.get("model")),
                Column("STATE", lambda g: g.get("state")),
                Column("MEMORY", lambda g: bytes_text(g.get("memory_bytes")), justify="right"),
            ],
        )


@cli.group()
def classes() -> None:
    """DeviceClasses."""


@classes.command("list")
@click.option("-q", "--search", help="Search class names.")
@list_options
@output_option()
@pass_session
def classes_list(
    session: Session, search: str | None, limit: int, fetch_all: bool, output_format: str | None
) -> None:
    """List DeviceClasses with how many devices match and are free.

    \b
    Example:
      dra-portal classes list -o wide
    """
    found, count = session.client.device_classes(limit=None if fetch_all else limit, q=search)
    emit(
        session_format(session, output_format),
        [dict(c) for c in found],
        CLASS_COLUMNS,
        total=count,
        empty="No DeviceClasses.",
    )
