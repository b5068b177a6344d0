"""Randomized consumable-capacity cases against a brute-force reference (dra-semantics §6, §10).

The reference enumerates every assignment of the claims' device slots to the cluster's devices
in the search's documented order (claims, requests, slots; each slot tries the devices in pool,
slice, device order) and keeps the first one the capacity rules accept. The rules are those of
upstream's ``structured/internal/experimental/consumable_capacity.go`` (1.34 to 1.36):

- a request naming a capacity the device lacks (names compare exactly) skips the device;
- each capacity of the device is consumed: the amount asked for, else the policy's default,
  else the whole value; ``validRange`` raises it to ``min`` or to the next ``step`` from ``min``
  (integer ``Value()`` arithmetic, the result printed as ``BinarySI``); ``validValues`` to the
  next listed value;
- the amount must not exceed ``max``, miss the step grid or lie outside ``validValues`` (the
  default itself always passes), and what existing shares consumed plus this run's shares plus
  this amount must not exceed the capacity's value;
- a device without ``allowMultipleAllocations`` is used once, a multi-allocatable one by any
  number of requests and claims until its capacity runs out; within one request 1.36 takes
  each device at most once (the next slot starts after the previous device), 1.35 may give a
  shared device to the same request again; a result held without a ``shareID`` holds the device;
- request selectors on a ``color`` attribute and a claim's ``matchAttribute`` on it;
- 1.34 also checks, while taking a device for the k-th device of a request, the capacity of the
  k-th device of the same slice (its allocateDevice passes the index within the request where
  the index within the slice belongs; fixed in 1.35).

The comparison: same status, the allocator's picks valid under these rules with the same
consumed amounts (as upstream prints them), and the same picks as the reference's first valid
assignment (every rule is a function of the assignment so far, so the depth-first search and
the lexicographic enumeration find the same first solution).
"""

from __future__ import annotations

import random
from dataclasses import dataclass, field
from fractions import Fraction

import pytest

from dra.allocator import run_case
from dra.quantity import format_quantity, parse_quantity

from .cases import case, claim, device_class, request, resource_slice

DRIVER = "gpu.example.com"
COLORS = ("red", "blue")
VERSIONS = ("1.34", "1.35", "1.36")
SEEDS = range(300)


@dataclass
class Capacity:
    value: str
    default: str | None = None
    valid_values: list[str] | None = None
    minimum: str | None = None
    maximum: str | None = None
    step: str | None = None
    has_range: bool = False

    def as_json(self) -> dict:
        body: dict = {"value": self.value}
        policy: dict = {}
        if self.default is not None:
            policy["default"] = self.default
        if self.valid_values is not None:
            policy["validValues"] = self.valid_values
        if self.has_range:
            policy["validRange"] = {
                key: amount
                for key, amount in (
                    ("min", self.minimum),
                    ("max", self.maximum),
                    ("step", self.step),
                )
                if amount is not None
            }
        if policy:
            body["requestPolicy"] = policy
        return body

    @property
    def has_policy(self) -> bool:
        return self.default is not None or self.valid_values is not None or self.has_range


@dataclass
class Dev:
    name: str
    color: str
    shared: bool
    capacity: dict[str, Capacity]
    position: int  # in the search's device order


@dataclass
class Req:
    claim: int
    name: str
    count: int
    color: str | None
    amounts: dict[str, str] | None


@dataclass
class Existing:
    device: str
    share: dict[str, str] | None  # consumedCapacity of a share, None: the whole device


@dataclass
class Random:
    version: str
    devices: list[Dev]
    requests: list[Req]
    claims: int
    match_color: list[bool]
    existing: list[Existing] = field(default_factory=list)
    slices: list[list[Dev]] = field(default_factory=list)


def _value(text: str) -> Fraction:
    return parse_quantity(text).value


def _ceil(value: Fraction) -> int:
    return -(-value.numerator // value.denominator)


def _random_capacity(rng: random.Random, unit: int) -> Capacity:
    size = rng.randint(4, 10)
    value = str(unit * size)
    kind = rng.choice(("none", "none", "default", "values", "range", "range"))
    if kind == "none":
        return Capacity(value)
    if kind == "default":
        return Capacity(value, default=str(unit * rng.randint(1, size)))
    if kind == "values":
        listed = sorted(rng.sample(range(1, size + 1), rng.randint(1, 3)))
        return Capacity(
            value,
            default=str(unit * rng.choice(listed)),
            valid_values=[str(unit * item) for item in listed],
        )
    step = rng.choice((None, 1, 2, 3))
    grid = step or 1
    minimum = grid * rng.randint(0, 1)
    top = minimum + grid * ((size - minimum) // grid)
    maximum = rng.choice((None, rng.randrange(minimum, top + 1, grid)))
    default = rng.randrange(minimum, (maximum if maximum is not None else top) + 1, grid)
    return Capacity(
        value,
        default=str(unit * default),
        minimum=str(unit * minimum),
        maximum=None if maximum is None else str(unit * maximum),
        step=None if step is None else str(unit * step),
        has_range=True,
    )


def _random_amount(rng: random.Random, unit: int) -> str:
    if unit == 1 and rng.random() < 0.2:
        return f"{rng.randint(1, 8) * 1000 + 500}m"
    return str(unit * (rng.randint(0, 3) if rng.random() < 0.8 else rng.randint(4, 11)))


def _random(seed: int, version: str) -> Random:
    rng = random.Random(seed)
    # 1.34 re-checks the capacity of the device at the slot's index within the request in the
    # chosen device's slice: either every device alone in its slice and one device a request
    # (the re-check looks at the device itself), or all devices shared in one slice without
    # constraints, so that a failed re-check leaves nothing behind that the reference could
    # not see (upstream keeps a dedicated device marked and a constraint's value).
    one_slice = version == "1.34" and rng.random() < 0.5
    # 1024 makes step-rounded amounts print as BinarySI ("2Ki"), unlike the inputs ("2048").
    unit = rng.choice((1, 1, 1024))
    devices = []
    for index in range(rng.randint(1, 5)):
        capacity = {}
        if rng.random() < 0.85:
            capacity["mem"] = _random_capacity(rng, unit)
        if rng.random() < 0.2:
            capacity["bw"] = Capacity(str(unit * rng.randint(2, 6)))
        shared = one_slice or rng.random() < 0.75
        devices.append(Dev(f"d{index}", rng.choice(COLORS), shared, capacity, index))
    claims = rng.randint(1, 2)
    requests = []
    for claim_index in range(claims):
        for index in range(rng.randint(1, 2)):
            amounts = None
            if rng.random() < 0.65:
                amounts = {"mem": _random_amount(rng, unit)}
                if rng.random() < 0.15:
                    amounts["bw"] = str(unit * rng.randint(1, 3))
                if rng.random() < 0.05:
                    amounts = {f"{DRIVER}/mem": amounts["mem"]}
            requests.append(
                Req(
                    claim_index,
                    f"r{index}",
                    1
                    if version == "1.34" and not one_slice
                    else min(rng.choice((1, 1, 2, 3)), len(devices) if one_slice else 3),
                    rng.choice(COLORS) if rng.random() < 0.2 else None,
                    amounts,
                )
            )
    existing = []
    for dev in devices:
        if rng.random() < 0.1:
            existing.append(Existing(dev.name, None))
        elif dev.shared and dev.capacity and rng.random() < 0.4:
            share = {
                name: str(unit * rng.randint(0, _ceil(_value(cap.value)) // unit // 2))
                for name, cap in dev.capacity.items()
            }
            existing.append(Existing(dev.name, share))
    if one_slice:
        slices = [devices]
    elif version == "1.34":
        slices = [[dev] for dev in devices]
    else:
        half = (len(devices) + 1) // 2
        slices = [part for part in (devices[:half], devices[half:]) if part]
    return Random(
        version,
        devices,
        requests,
        claims,
        [not one_slice and rng.random() < 0.25 for _ in range(claims)],
        existing,
        slices,
    )


def _body(data: Random) -> dict:
    def device_json(dev: Dev) -> dict:
        body: dict = {"name": dev.name, "attributes": {"color": {"string": dev.color}}}
        if dev.shared:
            body["allowMultipleAllocations"] = True
        if dev.capacity:
            body["capacity"] = {name: cap.as_json() for name, cap in dev.capacity.items()}
        return body

    slices = [
        resource_slice(f"slice-{index}", [device_json(dev) for dev in part], count=len(data.slices))
        for index, part in enumerate(data.slices)
    ]
    claims = []
    for claim_index in range(data.claims):
        requests = []
        for item in data.requests:
            if item.claim != claim_index:
                continue
            fields: dict = {"count": item.count}
            if item.color:
                fields["selectors"] = [f'device.attributes["{DRIVER}"].color == "{item.color}"']
            if item.amounts is not None:
                fields["capacity"] = {"requests": item.amounts}
            requests.append(request(item.name, **fields))
        constraints = (
            [{"matchAttribute": f"{DRIVER}/color"}] if data.match_color[claim_index] else None
        )
        claims.append(claim(f"claim-{claim_index}", requests, constraints))
    results = []
    for number, held in enumerate(data.existing):
        entry: dict = {"request": "r", "driver": DRIVER, "pool": "pool-1", "device": held.device}
        if held.share is not None:
            entry["shareID"] = f"00000000-0000-0000-0000-{number:012d}"
            entry["consumedCapacity"] = held.share
        results.append(entry)
    allocated = (
        [
            {
                "metadata": {"name": "taken", "namespace": "default"},
                "status": {"allocation": {"devices": {"results": results}}},
            }
        ]
        if results
        else []
    )
    return case(
        claims=claims,
        slices=slices,
        classes=[device_class()],
        allocated=allocated,
        version=data.version,
    )


# --- the reference rules ------------------------------------------------------------------------


def _consumed(asked: str | None, cap: Capacity) -> tuple[Fraction, str]:
    """The amount a share takes of one capacity and how upstream prints it."""
    if asked is None:
        text = cap.default if cap.default is not None else cap.value
        return _value(text), format_quantity(_value(text), parse_quantity(text).format)
    amount = _value(asked)
    own = format_quantity(amount, parse_quantity(asked).format)
    if cap.has_range and cap.minimum is not None:
        minimum = _value(cap.minimum)
        if amount < minimum:
            return minimum, format_quantity(minimum, parse_quantity(cap.minimum).format)
        if cap.step is None:
            return amount, own
        step = _ceil(_value(cap.step))
        steps = -(-(_ceil(amount) - _ceil(minimum)) // step)
        rounded = Fraction(_ceil(minimum) + step * steps)
        return rounded, format_quantity(rounded, "BinarySI")
    if cap.valid_values is not None:
        for listed in cap.valid_values:
            if amount <= _value(listed):
                return _value(listed), format_quantity(
                    _value(listed), parse_quantity(listed).format
                )
    return amount, own


def _allowed(amount: Fraction, cap: Capacity) -> bool:
    if not cap.has_policy:
        return True
    if cap.default is not None and amount == _value(cap.default):
        return True
    if cap.has_range:
        if cap.maximum is not None and amount > _value(cap.maximum):
            return False
        if cap.step is not None:
            return (_ceil(amount) - _ceil(_value(cap.minimum or "0"))) % _ceil(
                _value(cap.step)
            ) == 0
        return True
    if cap.valid_values:
        return amount in {_value(listed) for listed in cap.valid_values}
    return True


def _fits(
    item: Req, dev: Dev, load: dict[tuple[str, str], Fraction]
) -> dict[str, tuple[Fraction, str]] | None:
    """What a share of ``dev`` for ``item`` takes of each capacity, or None if it does not fit."""
    if any(name not in dev.capacity for name in item.amounts or {}):
        return None
    taken = {}
    for name, cap in dev.capacity.items():
        amount, text = _consumed((item.amounts or {}).get(name), cap)
        if not _allowed(amount, cap):
            return None
        if load.get((dev.name, name), Fraction(0)) + amount > _value(cap.value):
            return None
        taken[name] = (amount, text)
    return taken


def _slots(data: Random) -> list[Req]:
    return [item for item in data.requests for _ in range(item.count)]


def _check(data: Random, assignment: list[Dev]) -> list[list[dict]] | None:
    """The claims' results if ``assignment`` (one device for each of the first slots, in slot
    order) is valid. Every rule only ever rejects more as slots are added."""
    held = {entry.device for entry in data.existing if entry.share is None}
    load: dict[tuple[str, str], Fraction] = {}
    for entry in data.existing:
        for name, amount in (entry.share or {}).items():
            load[entry.device, name] = load.get((entry.device, name), Fraction(0)) + _value(amount)
    dedicated: set[str] = set()
    results: list[list[dict]] = [[] for _ in range(data.claims)]
    colors: list[set[str]] = [set() for _ in range(data.claims)]
    previous: tuple[Req, int] | None = None
    slot = 0
    for item, dev in zip(_slots(data)[: len(assignment)], assignment, strict=True):
        # 1.36: the next slot of a request starts after the previous slot's device.
        same_request = previous is not None and previous[0] is item
        if same_request and data.version == "1.36" and dev.position <= previous[1]:
            return None
        slot = slot + 1 if same_request else 0
        previous = (item, dev.position)
        if dev.name in held or dev.name in dedicated:
            return None
        if item.color is not None and dev.color != item.color:
            return None
        taken = _fits(item, dev, load)
        if taken is None:
            return None
        # 1.34 also checks the device of the same slice at the slot's index in the request.
        if data.version == "1.34":
            part = next(part for part in data.slices if dev in part)
            if _fits(item, part[slot], load) is None:
                return None
        entry: dict = {"request": item.name, "device": dev.name}
        if dev.shared:
            # Every share gets an id; a device without capacities lists no consumedCapacity.
            entry["shared"] = True
            for name, (amount, _) in taken.items():
                load[dev.name, name] = load.get((dev.name, name), Fraction(0)) + amount
            if taken:
                entry["consumedCapacity"] = {name: text for name, (_, text) in taken.items()}
        else:
            dedicated.add(dev.name)
        results[item.claim].append(entry)
        colors[item.claim].add(dev.color)
    if any(match and len(seen) > 1 for match, seen in zip(data.match_color, colors, strict=True)):
        return None
    return results


def _reference(data: Random) -> list[list[dict]] | None:
    """The first valid assignment in search order, or None when there is none.

    Every assignment in lexicographic order (the first slot varies slowest, each slot over
    the devices in search order), skipping those whose valid prefix is already rejected.
    """
    slots = len(_slots(data))

    def first(prefix: list[Dev]) -> list[list[dict]] | None:
        results = _check(data, prefix)
        if results is None or len(prefix) == slots:
            return results
        for dev in data.devices:
            found = first([*prefix, dev])
            if found is not None:
                return found
        return None

    return first([])


def _picked(output: dict) -> list[list[dict]]:
    picked = []
    for allocation in output["allocations"]:
        entries = []
        for entry in allocation["devices"].get("results", []):
            item = {"request": entry["request"], "device": entry["device"]}
            if "shareID" in entry:
                item["shared"] = True
            if "consumedCapacity" in entry:
                item["consumedCapacity"] = entry["consumedCapacity"]
            entries.append(item)
        picked.append(entries)
    return picked


@pytest.mark.parametrize("version", VERSIONS)
def test_the_allocator_agrees_with_brute_force_on_consumable_capacity(version):
    for seed in SEEDS:
        data = _random(seed, version)
        output = run_case(_body(data))
        expected = _reference(data)
        context = f"seed {seed}, version {version}: {output}"
        assert output["status"] == ("unsatisfiable" if expected is None else "allocated"), context
        if expected is None:
            continue
        picked = _picked(output)
        by_name = {dev.name: dev for dev in data.devices}
        # Valid under the reference rules, with the reference's consumed amounts...
        own = _check(data, [by_name[entry["device"]] for claim in picked for entry in claim])
        assert own == picked, context
        # ...and the first valid assignment in the documented search order.
        assert picked == expected, context
