"""Where each box of a node's topology goes: the geometry the SVG template draws.

NUMA nodes flow left to right and wrap at ``MAX_WIDTH``; inside each, its PCIe roots side by
side, inside those their NVLink cliques, inside those their GPUs. A MIG GPU is wider: one
column per memory slice, one lane per profile, each partition drawn at its placement.
Numbers only; the template (``devices/node_topology.html``) turns them into SVG with links,
``<title>`` elements and text labels.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

from django.urls import reverse

from devices.models import Device, DeviceState
from devices.tables import human_bytes
from devices.topology import CounterUse, GpuBox, NodeTopology, Partition, Reading

__all__ = ["Drawing", "draw"]

MAX_WIDTH = 1200  # a GPU box row wraps beyond it
GAP = 10
PAD = 8
LABEL_H = 20
GPU_W = 180
SLICE_W = 28
LANE_H = 15
ROW_H = 15
HEADER_H = 62  # name and state, model, utilisation
UTIL_X = 36  # where the utilisation bar starts
COUNTER_X = 80  # where counter bars start
CLAIM_ROW_H = 14
MAX_CLAIM_ROWS = 3


@dataclass
class Frame:
    """A group's outline and label: a NUMA node, a PCIe root or an NVLink clique."""

    x: int
    y: int
    w: int
    h: int
    label: str
    level: str  # numa, pcie, clique
    is_unknown: bool


# Shapes inside a GPU box are relative to its top left corner (the template translates).


@dataclass
class PartitionShape:
    x: int
    y: int
    w: int
    h: int
    partition: Partition
    url: str
    label: str
    title: str
    util_w: int  # the utilisation strip along its bottom


@dataclass
class CounterShape:
    y: int
    w: int  # of the bar, which starts at COUNTER_X
    used_w: int
    label: str
    value: str


@dataclass
class ClaimLine:
    y: int
    text: str
    url: str = ""


@dataclass
class GpuShape:
    w: int
    h: int
    box: GpuBox
    url: str
    title: str
    state_label: str
    model: str
    util_text: str
    util_w: int  # the utilisation bar's filled width
    util_bar_w: int
    has_data: bool
    shade_h: int  # the box shaded from the bottom up to its utilisation
    x: int = 0
    y: int = 0
    grid_y: int = 0
    grid_h: int = 0
    slice_labels: list[tuple[int, str]] = field(default_factory=list)
    slice_lines: list[int] = field(default_factory=list)
    partitions: list[PartitionShape] = field(default_factory=list)
    counters: list[CounterShape] = field(default_factory=list)
    claims: list[ClaimLine] = field(default_factory=list)

    @property
    def right(self) -> int:
        """Where right-aligned text ends."""
        return self.w - PAD

    @property
    def shade_y(self) -> int:
        return self.h - self.shade_h


@dataclass
class Drawing:
    width: int
    height: int
    frames: list[Frame]
    gpus: list[GpuShape]

    @property
    def view_box(self) -> str:
        return f"-2 -2 {self.width + 4} {self.height + 4}"


_STATE_LABELS = {state.value: str(state.label) for state in DeviceState}


def _state_label(state: str) -> str:
    return _STATE_LABELS.get(state, state)


class _DeviceUrls:
    """Device pages' URLs, reversed once per pool (a MIG node has hundreds of devices; device
    names are DNS labels, so appending one needs no quoting)."""

    def __init__(self) -> None:
        self._prefixes: dict[tuple[str, str], str] = {}

    def __call__(self, device: Device) -> str:
        key = (device.driver, device.pool_name)
        if key not in self._prefixes:
            url = reverse(
                "device-detail",
                kwargs={"driver": device.driver, "pool": device.pool_name, "device": "-"},
            )
            self._prefixes[key] = url[: -len("-/")]
        return f"{self._prefixes[key]}{quote(device.name)}/"


def _claim_url(claim: Any) -> str:
    # The claims app sits above this one (no import): its page is reached by URL name.
    return reverse(
        "resourceclaim-detail", kwargs={"namespace": claim.namespace, "name": claim.name}
    )


def _reading_text(reading: Reading | None, *, partitioned: bool = False) -> str:
    if reading is not None and reading.gpu_util is None and partitioned:
        # NVML has no utilisation of a GPU in MIG mode: its partitions' strips show theirs.
        return "stale (MIG mode)" if reading.is_stale else "MIG mode"
    if reading is None or reading.gpu_util is None:
        return "no data"
    if reading.is_stale:
        return f"stale ({reading.gpu_util} %)"
    return f"{reading.gpu_util} %"


def _lanes(partitions: list[Partition]) -> list[tuple[Partition, int]]:
    """Each partition's lane: one or more per profile (largest first), placements that do not
    overlap sharing a lane; partitions without a placement after them, side by side."""
    lanes: list[tuple[str, list[tuple[int, int]]]] = []
    placed: list[tuple[Partition, int]] = []
    for partition in partitions:
        start = partition.start if partition.start is not None else -1
        span = (start, start + partition.size)
        for index, (profile, taken) in enumerate(lanes):
            if profile == partition.profile and all(span[1] <= a or span[0] >= b for a, b in taken):
                taken.append(span)
                placed.append((partition, index))
                break
        else:
            lanes.append((partition.profile, [span]))
            placed.append((partition, len(lanes) - 1))
    return placed


def _partition_label(partition: Partition, width: float) -> str:
    """The profile if it fits, else its compute part (``1g``), else nothing."""
    for text in (partition.profile, partition.profile.split(".")[0]):
        if len(text) * 5.6 + 4 <= width:
            return text
    return ""


def _partition_title(partition: Partition) -> str:
    device = partition.device
    where = (
        f"memory slice{'s' if partition.size > 1 else ''} "
        + (
            f"{partition.start}–{partition.start + partition.size - 1}"
            if partition.size > 1
            else str(partition.start)
        )
        if partition.start is not None
        else "placement not published"
    )
    parts = [f"{device.name} · {partition.profile} · {where} · {_state_label(device.state)}"]
    if device.state_reason:
        parts.append(device.state_reason)
    if partition.claim is not None:
        parts.append(f"claim {partition.claim.namespace}/{partition.claim.name}")
    if partition.is_held:
        parts.append(f"GPU utilisation {_reading_text(partition.reading)}")
    return " — ".join(parts)


def _counter_value(counter: CounterUse) -> str:
    if counter.unit == "bytes":
        return f"{human_bytes(counter.used) or '0'} / {human_bytes(counter.total)}"
    return f"{counter.used} / {counter.total}"


def _truncate(text: str, width: int, char_w: float = 6.0) -> str:
    """``text`` cut to what fits in ``width`` pixels (the whole text is in the title)."""
    fits = max(int(width / char_w), 4)
    return text if len(text) <= fits else text[: fits - 1] + "…"


def _gpu_shape(box: GpuBox, urls: _DeviceUrls) -> GpuShape:
    """A GPU box's size and everything inside it, relative to its top left corner."""
    device = box.device
    placed_slices = max(
        (p.start + p.size for p in box.partitions if p.start is not None), default=0
    )
    slices = max(box.slice_count, placed_slices)
    columns = max(slices, 1)
    width = max(GPU_W, columns * SLICE_W + 2 * PAD) if box.is_partitioned else GPU_W
    reading = box.reading
    util = reading.gpu_util if reading is not None and reading.gpu_util is not None else None
    bar_w = width - UTIL_X - 76
    shape = GpuShape(
        w=width,
        h=0,
        box=box,
        url=urls(device),
        title="",
        state_label=_state_label(device.state),
        model=_truncate(device.model_name or device.device_type or device.driver, width - 2 * PAD),
        util_text=_reading_text(reading, partitioned=box.is_partitioned),
        util_w=round(bar_w * (util or 0) / 100),
        util_bar_w=bar_w,
        has_data=reading is not None and reading.has_data,
        shade_h=0,
    )
    cursor = HEADER_H
    if box.is_partitioned:
        slice_w = (width - 2 * PAD) / columns
        shape.slice_labels = [(round(PAD + (i + 0.5) * slice_w), str(i)) for i in range(slices)]
        shape.slice_lines = [round(PAD + i * slice_w) for i in range(columns + 1)]
        shape.grid_y = cursor + 12
        placed = _lanes(box.partitions)
        lane_count = max((lane for _, lane in placed), default=-1) + 1
        loose = 0
        for partition, lane in placed:
            if partition.start is not None:
                left, span = PAD + partition.start * slice_w, partition.size * slice_w
            else:
                left, span = PAD + (loose % columns) * slice_w, slice_w
                loose += 1
            # Only held partitions have readings worth a strip (others run nothing).
            part_reading = partition.reading if partition.is_held else None
            part_util = (part_reading.gpu_util or 0) if part_reading is not None else 0
            shape.partitions.append(
                PartitionShape(
                    x=round(left + 1),
                    y=shape.grid_y + lane * LANE_H,
                    w=round(span - 2),
                    h=LANE_H - 3,
                    partition=partition,
                    url=urls(partition.device),
                    label=_partition_label(partition, span - 2),
                    title=_partition_title(partition),
                    util_w=round((span - 2) * part_util / 100),
                )
            )
        shape.grid_h = lane_count * LANE_H
        cursor = shape.grid_y + shape.grid_h + 4
        counter_w = width - COUNTER_X - PAD
        for counter in box.counters:
            shape.counters.append(
                CounterShape(
                    y=cursor,
                    w=counter_w,
                    used_w=round(counter_w * counter.percent / 100),
                    label=counter.name,
                    value=_counter_value(counter),
                )
            )
            cursor += ROW_H
    lines = []
    if box.held_partitions:
        held = f"{len(box.held_partitions)} of {len(box.partitions)} placements held"
        lines.append(ClaimLine(0, held))
    # The claims holding the GPU or its partitions, each once; others' only counted.
    holders = list(box.claims)
    hidden = box.held_by_others
    for partition in box.held_partitions:
        if partition.claim is None:
            hidden += 1
        elif partition.claim not in holders:
            holders.append(partition.claim)
    lines += [
        ClaimLine(0, _truncate(f"↳ {c.namespace}/{c.name}", width - 2 * PAD, 5.6), _claim_url(c))
        for c in holders
    ]
    if hidden:
        lines.append(ClaimLine(0, "held by a claim in another tenant"))
    if len(lines) > MAX_CLAIM_ROWS:
        lines = [*lines[: MAX_CLAIM_ROWS - 1], ClaimLine(0, f"and {len(lines) - 1} more")]
    claims = lines
    for line in claims:
        line.y = cursor + 11
        cursor += CLAIM_ROW_H
    shape.claims = claims
    shape.h = max(cursor + PAD - 2, HEADER_H + CLAIM_ROW_H)
    shape.shade_h = round(shape.h * (util or 0) / 100) if shape.has_data else 0
    title = [f"{device.name} · {shape.state_label}"]
    if device.model_name:
        title.append(device.model_name)
    if device.state_reason:
        title.append(device.state_reason)
    if device.pci_bus_id:
        title.append(f"PCI {device.pci_bus_id}")
    title.append(f"GPU utilisation {shape.util_text}")
    shape.title = " — ".join(title)
    return shape


@dataclass
class _Box:
    """A laid-out group before it is placed: its size and a way to place it."""

    w: int
    h: int
    place: Callable[[int, int], None]


def _rows(children: list[_Box], limit: int) -> list[list[_Box]]:
    """Children in rows no wider than ``limit`` (a row holds at least one)."""
    rows: list[list[_Box]] = [[]]
    width = 0
    for child in children:
        if rows[-1] and width + GAP + child.w > limit:
            rows.append([])
            width = 0
        width += child.w + (GAP if rows[-1] else 0)
        rows[-1].append(child)
    return rows


def _group(
    label: str,
    level: str,
    is_unknown: bool,
    children: list[_Box],
    frames: list[Frame],
    limit: int,
) -> _Box:
    """A frame around ``children`` laid out in rows no wider than ``limit``."""
    rows = _rows(children, limit)
    row_sizes = [
        (sum(c.w for c in row) + GAP * (len(row) - 1), max((c.h for c in row), default=0))
        for row in rows
    ]
    inner_w = max((w for w, _ in row_sizes), default=0)
    inner_h = sum(h for _, h in row_sizes) + GAP * (len(rows) - 1)
    w, h = inner_w + 2 * PAD, inner_h + LABEL_H + PAD

    def place(x: int, y: int) -> None:
        frames.append(Frame(x, y, w, h, label, level, is_unknown))
        top = y + LABEL_H
        for row, (_, row_h) in zip(rows, row_sizes, strict=True):
            left = x + PAD
            for child in row:
                child.place(left, top)
                left += child.w + GAP
            top += row_h + GAP

    return _Box(w, h, place)


def draw(topology: NodeTopology) -> Drawing:
    """The geometry of ``topology``: frames (outermost first) and GPU boxes."""
    frames: list[Frame] = []
    gpus: list[GpuShape] = []
    urls = _DeviceUrls()

    def gpu_box(box: GpuBox) -> _Box:
        shape = _gpu_shape(box, urls)

        def place(x: int, y: int) -> None:
            shape.x, shape.y = x, y
            gpus.append(shape)

        return _Box(shape.w, shape.h, place)

    numa_boxes = []
    for numa in topology.numa_nodes:
        roots = []
        for root in numa.roots:
            cliques = [
                _group(
                    c.label,
                    "clique",
                    c.key is None,
                    [gpu_box(g) for g in c.gpus],
                    frames,
                    MAX_WIDTH - 6 * PAD,
                )
                for c in root.cliques
            ]
            roots.append(
                _group(root.label, "pcie", root.key is None, cliques, frames, MAX_WIDTH - 4 * PAD)
            )
        numa_boxes.append(
            _group(numa.label, "numa", numa.key is None, roots, frames, MAX_WIDTH - 2 * PAD)
        )

    x = y = row_h = width = 0
    for box in numa_boxes:
        if x and x + box.w > MAX_WIDTH:
            x, y, row_h = 0, y + row_h + GAP, 0
        box.place(x, y)
        x += box.w + GAP
        row_h = max(row_h, box.h)
        width = max(width, x - GAP)
    frames.sort(key=lambda f: ("numa", "pcie", "clique").index(f.level))
    return Drawing(width=width, height=y + row_h, frames=frames, gpus=gpus)
