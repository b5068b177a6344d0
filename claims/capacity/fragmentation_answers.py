"""What the fragmentation advisor answers (``claims.capacity.fragmentation`` computes it): the
shapes it tries, each node's answer, the cluster-wide summary, and how they read in words.

Plain data and phrasing: no allocator calls, no database.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from typing import Any

from dra.model import ResourceClaim as ClaimModel
from dra.model import parse_claim

__all__ = [
    "MAX_FITS",
    "ClassAdvice",
    "ClassGrid",
    "ClusterAdvice",
    "LargestBlock",
    "NodeAdvice",
    "Shape",
    "ShapeFit",
    "ShapeKind",
    "ShapeSummary",
    "class_grids",
    "counted",
    "partition_sentence",
    "room_sentence",
    "whole_sentence",
]

# How many claims of one shape a node is asked to take at most (an 8-GPU A100 node takes 56
# of the smallest profile).
MAX_FITS = 64


class ShapeKind(enum.StrEnum):
    PARTITION = "partition"  # one MIG device of a profile
    WHOLE = "whole"  # whole devices (GPUs), one or several


@dataclass(frozen=True, slots=True)
class Shape:
    """One claim the advisor tries: ``count`` devices of ``device_class`` passing
    ``selectors``, all agreeing on ``match_attribute`` when it is set."""

    device_class: str
    kind: ShapeKind
    label: str
    count: int = 1
    profile: str = ""
    selectors: tuple[str, ...] = ()
    match_attribute: str | None = None

    @property
    def key(self) -> str:
        return f"{self.device_class}:{self.profile or self.count}"

    @property
    def spec(self) -> dict[str, Any]:
        """The ResourceClaim ``spec`` the allocator is asked to place."""
        exactly: dict[str, Any] = {
            "deviceClassName": self.device_class,
            "allocationMode": "ExactCount",
            "count": self.count,
        }
        if self.selectors:
            exactly["selectors"] = [{"cel": {"expression": e}} for e in self.selectors]
        devices: dict[str, Any] = {"requests": [{"name": "shape", "exactly": exactly}]}
        if self.match_attribute and self.count > 1:
            devices["constraints"] = [
                {"requests": ["shape"], "matchAttribute": self.match_attribute}
            ]
        return {"devices": devices}

    def claim(self, count: int | None = None, name: str = "fragmentation-probe") -> ClaimModel:
        """The shape as a parsed claim (``count`` overrides the number of devices)."""
        spec = self.spec
        if count is not None:
            spec["devices"]["requests"][0]["exactly"]["count"] = count
            if self.match_attribute and count > 1:
                spec["devices"]["constraints"] = [
                    {"requests": ["shape"], "matchAttribute": self.match_attribute}
                ]
        return parse_claim(
            {"metadata": {"name": name, "namespace": "portal", "uid": name}, "spec": spec},
            f"shape {self.key}",
        )


@dataclass(slots=True)
class ShapeFit:
    """How a node takes one shape: ``fits`` claims of it at once (``capped``: it stopped at
    :data:`MAX_FITS` and may take more); for partitions, per GPU how many of those landed on
    it; ``first``: the devices the first claim gets (empty when none fits)."""

    shape: Shape
    fits: int = 0
    capped: bool = False
    gpus: dict[str, int] = field(default_factory=dict)
    first: list[str] = field(default_factory=list)
    error: str | None = None

    @property
    def is_allocatable(self) -> bool:
        return self.fits > 0


@dataclass(slots=True)
class ClassAdvice:
    """One device class on one node: every shape of it the node publishes devices for, and
    for whole devices the largest number one claim can get (``largest``), constrained to one
    clique by ``clique_attribute`` when the devices publish one."""

    device_class: str
    kind: ShapeKind
    devices: int
    fits: list[ShapeFit] = field(default_factory=list)
    clique_attribute: str | None = None
    largest: int = 0

    @property
    def sentence(self) -> str:
        if self.kind is ShapeKind.PARTITION:
            return partition_sentence(self.fits)
        return whole_sentence(self.largest, self.devices, self.clique_attribute)


@dataclass(slots=True)
class NodeAdvice:
    node: str
    classes: list[ClassAdvice] = field(default_factory=list)
    allocations: int = 0  # allocator calls it took
    seconds: float = 0.0

    @property
    def sentences(self) -> list[str]:
        return [advice.sentence for advice in self.classes]

    @property
    def milliseconds(self) -> float:
        return self.seconds * 1000


@dataclass(slots=True)
class ShapeSummary:
    """One shape cluster-wide: the nodes that take it and how often, the GPUs with room."""

    shape: Shape
    nodes: list[tuple[str, int]] = field(default_factory=list)  # (node, fits), fits > 0
    published_on: int = 0  # nodes publishing devices for it
    fits: int = 0
    gpus: int = 0
    capped: bool = False

    @property
    def sentence(self) -> str:
        shape = self.shape
        if not self.nodes:
            if shape.kind is ShapeKind.PARTITION:
                return f"No GPU can take a {shape.label}."
            return f"{shape.label} in one claim fit on no node."
        where = _nodes_phrase([name for name, _ in self.nodes])
        more = "+" if self.capped else ""
        if shape.kind is ShapeKind.PARTITION:
            return (
                f"{counted(self.gpus, 'GPU')} {_on(where)} each have room for a {shape.label} "
                f"({self.fits}{more} in all)."
            )
        return f"{shape.label} in one claim: {self.fits}{more} at once, {_on(where)}."


@dataclass(slots=True)
class LargestBlock:
    """The most devices of a whole-device class one claim can get, and where."""

    device_class: str
    clique_attribute: str | None
    count: int
    nodes: list[str]

    @property
    def sentence(self) -> str:
        what = "NVLink clique" if self.clique_attribute else "set on one node"
        if not self.count:
            return f"{self.device_class}: no device can be allocated anywhere."
        return (
            f"{self.device_class}: largest allocatable {what}: {counted(self.count, 'GPU')} on "
            f"{_nodes_phrase(self.nodes)}."
        )


@dataclass(slots=True)
class ClusterAdvice:
    nodes: list[NodeAdvice] = field(default_factory=list)
    shapes: list[ShapeSummary] = field(default_factory=list)
    largest: list[LargestBlock] = field(default_factory=list)
    allocations: int = 0
    seconds: float = 0.0
    version: int | None = None
    # Nodes not asked about yet (the time budget ran out): a later call goes on with them.
    pending: list[str] = field(default_factory=list)

    @property
    def is_complete(self) -> bool:
        return not self.pending

    @property
    def milliseconds(self) -> float:
        return self.seconds * 1000

    @property
    def sentences(self) -> list[str]:
        """The answers in words: the largest block of each whole-device class (and that no
        node takes its largest shape, when none does), then per partition class which profiles
        still fit on how many GPUs, and where. While nodes are pending, only what was found
        to fit is said: that something fits nowhere is not known yet."""
        complete = self.is_complete
        sentences = []
        for block in self.largest:
            if block.count or complete:
                sentences.append(block.sentence)
            whole = [
                summary
                for summary in self.shapes
                if summary.shape.device_class == block.device_class
                and summary.shape.kind is ShapeKind.WHOLE
            ]
            biggest = max(whole, key=lambda summary: summary.shape.count, default=None)
            if complete and biggest is not None and not biggest.nodes and biggest.shape.count > 1:
                on = " on one NVLink clique" if block.clique_attribute else ""
                sentences.append(
                    f"{block.device_class}: no node can take {biggest.shape.count} GPUs in one "
                    f"claim{on}."
                )
        by_class: dict[str, list[tuple[str, int, str]]] = {}
        for summary in self.shapes:
            if summary.shape.kind is ShapeKind.PARTITION and (summary.nodes or complete):
                where = (
                    f" on {_nodes_phrase([n for n, _ in summary.nodes])}" if summary.nodes else ""
                )
                by_class.setdefault(summary.shape.device_class, []).append(
                    (summary.shape.label, summary.gpus, where)
                )
        sentences.extend(f"{name}: {room_sentence(rooms)}" for name, rooms in by_class.items())
        return sentences


# --- phrasing ---------------------------------------------------------------------------------


def counted(number: int, noun: str) -> str:
    """E.g. "1 GPU", "6 GPUs"."""
    return f"{number} {noun}{'' if number == 1 else 's'}"


def _on(where: str) -> str:
    return f"on {where}"


def _nodes_phrase(names: list[str], shown: int = 3) -> str:
    if len(names) <= shown:
        return _join(names)
    return f"{len(names)} nodes ({', '.join(names[:shown])}, …)"


def _join(items: list[str], last: str = "and") -> str:
    if len(items) <= 1:
        return "".join(items)
    return f"{', '.join(items[:-1])} {last} {items[-1]}"


def room_sentence(rooms: list[tuple[str, int, str]]) -> str:
    """Profiles grouped by how many GPUs have room for them, e.g. "6 GPUs each have room for a
    1g.5gb or 2g.10gb; 2 GPUs for a 3g.20gb; none can take a 7g.40gb". ``rooms``: (profile,
    GPUs with room, where: "" or e.g. " on dgx-a100-01"), smallest profile first."""
    groups: dict[tuple[int, str], list[str]] = {}
    for label, gpus, where in rooms:
        if gpus:
            groups.setdefault((gpus, where), []).append(label)
    parts: list[str] = []
    for (gpus, where), labels in sorted(groups.items(), key=lambda item: -item[0][0]):
        lead = f"{counted(gpus, 'GPU')}{where}"
        if parts:
            parts.append(f"{lead} for a {_join(labels, 'or')}")
        else:
            verb = "has" if gpus == 1 else "each have"
            parts.append(f"{lead} {verb} room for a {_join(labels, 'or')}")
    missing = [label for label, gpus, _ in rooms if not gpus]
    if missing:
        parts.append(f"{'none' if parts else 'no GPU'} can take a {_join(missing, 'or')}")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + "."


def partition_sentence(fits: list[ShapeFit]) -> str:
    """One node's partitions: see :func:`room_sentence`."""
    return room_sentence([(fit.shape.label, len(fit.gpus), "") for fit in fits])


def whole_sentence(largest: int, devices: int, clique_attribute: str | None) -> str:
    if not largest:
        return f"None of the {counted(devices, 'GPU')} can be allocated."
    what = "NVLink clique" if clique_attribute else "set on this node"
    return f"Largest allocatable {what}: {counted(largest, 'GPU')} (of {devices})."


@dataclass(slots=True)
class ClassGrid:
    """One device class cluster-wide, for the page: a row per node, a column per shape."""

    device_class: str
    kind: ShapeKind
    shapes: list[Shape]
    rows: list[tuple[str, ClassAdvice, list[ShapeFit | None]]]
    clique_attribute: str | None = None


def class_grids(report: ClusterAdvice) -> list[ClassGrid]:
    """The report by class: partition classes first (their profiles as columns), then whole
    devices (1, 2, 4, 8 as columns), each node that publishes the class a row."""
    shapes: dict[str, list[Shape]] = {}
    for summary in report.shapes:
        shapes.setdefault(summary.shape.device_class, []).append(summary.shape)
    grids: dict[str, ClassGrid] = {}
    for node in report.nodes:
        for entry in node.classes:
            columns = shapes.get(entry.device_class, [])
            grid = grids.setdefault(
                entry.device_class,
                ClassGrid(entry.device_class, entry.kind, columns, [], entry.clique_attribute),
            )
            by_key = {fit.shape.key: fit for fit in entry.fits}
            grid.rows.append((node.node, entry, [by_key.get(shape.key) for shape in columns]))
    return sorted(grids.values(), key=lambda g: (g.kind is ShapeKind.WHOLE, g.device_class))
