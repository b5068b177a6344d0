"""The CEL environment of DRA selectors: variables, libraries, errors and limits."""

import pytest

from dra.cel import (
    MAX_EXPRESSION_LENGTH,
    CelCompileError,
    CelRuntimeError,
    compile_selector,
    device_input,
)
from dra.model import Device, DeviceCapacity
from dra.quantity import parse_quantity

GPU = device_input(
    Device(
        name="gpu-0",
        attributes={
            "type": ("string", "gpu"),
            "productName": ("string", "NVIDIA H100 80GB HBM3"),
            "driverVersion": ("version", "580.126.20"),
            "index": ("int", 3),
            "healthy": ("bool", True),
            "resource.kubernetes.io/pcieRoot": ("string", "pci0000:15"),
            "gpu.nvidia.com/numa": ("int", 0),
        },
        capacity={"memory": DeviceCapacity(parse_quantity("81559Mi"), None)},
        allow_multiple_allocations=True,
    ),
    "gpu.nvidia.com",
    expose_multiple_allocations=True,
)

A = 'device.attributes["gpu.nvidia.com"]'
C = 'device.capacity["gpu.nvidia.com"]'


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ('device.driver == "gpu.nvidia.com"', True),
        (f'{A}.type == "gpu"', True),
        (f"{A}.numa == 0", True),  # qualified with the driver's own domain: same map
        ('device.attributes["resource.kubernetes.io"].pcieRoot == "pci0000:15"', True),
        ('device.attributes["no.such.domain"].size() == 0', True),
        ('"no.such.domain" in device.attributes', False),
        ('"gpu.nvidia.com" in device.attributes', True),
        ('has(device.attributes["gpu.nvidia.com"].type)', True),
        ('has(device.attributes["gpu.nvidia.com"].nope)', False),
        (f'"type" in {A}', True),
        (f"{A}.index < 3.5", True),  # int attribute against a double
        ("1 < 2.5", True),  # cross-type numeric comparison compiles, as in cel-go
        (f"{A}.index == 3.0", True),
        (f"{A}.healthy", True),
        (f"{A}.missing == 1 || true", True),  # errors are absorbed by || ...
        (f"{A}.missing == 1 && false", False),  # ... and by &&
        (f'{C}.memory.compareTo(quantity("80Gi")) >= 0', False),  # 81559Mi < 80Gi
        (f'{C}.memory.compareTo(quantity("40Gi")) >= 0', True),
        (f'{C}.memory.isGreaterThan(quantity("80G"))', True),
        (f'{C}.memory == quantity("81559Mi")', True),
        ('quantity("80Gi") == quantity("81920Mi")', True),
        ('quantity("80G") == quantity("80Gi")', False),
        ('quantity("1.5").isInteger()', False),
        ('quantity("2k").asInteger() == 2000', True),
        ('quantity("1.5").asApproximateFloat() == 1.5', True),
        ('quantity("1").add(quantity("500m")) == quantity("1500m")', True),
        ('sign(quantity("1").sub(1)) == 0', True),  # a global function upstream
        ('isQuantity("1Gi") && !isQuantity("1 Gi")', True),
        (f'{A}.driverVersion.isGreaterThan(semver("580.95.5"))', True),
        (f"{A}.driverVersion.major() == 580", True),
        ('semver("1.2.3") == semver("1.2.3+build.1")', True),
        ('semver("v1.2", true) == semver("1.2.0")', True),
        ('isSemver("1.2.3") && !isSemver("v1.2.3") && isSemver("v1.2.3", true)', True),
        ('semver("1.0.0-alpha").isLessThan(semver("1.0.0"))', True),
        (f'{A}.productName.lowerAscii().contains("h100")', True),
        (f'{A}.productName.split(" ").size() == 4', True),
        (f'cel.bind(gpu, {A}, gpu.type == "gpu" && gpu.index == 3)', True),
        ('cel.bind(attrs, device.attributes, attrs["no.such"].size() == 0)', True),
        ("device.allowMultipleAllocations", True),
        ("[1, 2, 3].exists(x, x == 2)", True),
        ('"abc".find("b.") == "bc"', True),
        ('device.attributes[?"no.such"].hasValue()', True),
    ],
)
def test_it_evaluates_selectors_like_kubernetes(expression, expected):
    assert compile_selector(expression).matches(GPU) is expected


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        (f"{A}.missing == 1", "no such key: missing"),
        ('quantity("lots") == quantity("1")', "quantities must match the regular expression"),
        ('semver("1.2") == semver("1.2.0")', "No Major.Minor.Patch elements found"),
        ('quantity("1.5").asInteger() == 1', "cannot convert value to integer"),
        (f"{A}.productName", "could not be converted to bool"),
        (f'{A}.index.compareTo(quantity("1")) == 0', "no such overload"),
    ],
)
def test_it_reports_runtime_errors(expression, message):
    with pytest.raises(CelRuntimeError, match=message):
        compile_selector(expression).matches(GPU)


@pytest.mark.parametrize(
    ("expression", "message"),
    [
        ("true == 1", "<input>:1:6"),
        ('quantity("1") < quantity("2")', "no matching overload"),
        ("device.driver", "must evaluate to bool or the unknown type"),
        ("device.nosuchfield == 1", "undefined field 'nosuchfield'"),
        ("device.driver ==", "Syntax error"),
        ("unknownFunction(1)", "undeclared reference"),
        ('device.driver == "a" &&\n  device.driver.bogus()', "<input>:2:"),
    ],
)
def test_it_reports_compile_errors_with_their_position(expression, message):
    selector = compile_selector(expression)
    with pytest.raises(CelCompileError, match=message):
        selector.matches(GPU)


def test_it_rejects_expressions_over_the_length_limit():
    expression = "true && " * (MAX_EXPRESSION_LENGTH // 8) + "true"
    with pytest.raises(CelCompileError, match="too long"):
        compile_selector(expression).matches(GPU)


def test_it_stops_runaway_evaluations_with_a_cost_error():
    numbers = "[" + ",".join(str(number) for number in range(200)) + "]"
    expression = f"{numbers}.all(x, {numbers}.all(y, x + y >= 0))"
    with pytest.raises(CelRuntimeError, match="cost limit"):
        compile_selector(expression).matches(GPU)


def test_it_reports_unparseable_version_attributes_on_every_evaluation():
    broken = device_input(
        Device(name="d", attributes={"v": ("version", "1.2")}, capacity={}), "drv", True
    )
    with pytest.raises(CelRuntimeError, match="parse semantic version"):
        compile_selector('device.driver == "drv"').matches(broken)


def test_devices_with_equal_read_values_share_one_cached_result():
    selector = compile_selector(f'{A}.type == "gpu" && {A}.index > 1')
    assert sorted(selector.reads.paths) == [
        ("attr", "gpu.nvidia.com", "index"),
        ("attr", "gpu.nvidia.com", "type"),
    ]
