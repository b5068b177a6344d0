"""The function libraries of the DRA CEL environment beyond quantity and semver: Kubernetes'
list, network (IP and CIDR) and comprehension functions, and the portal's internal cost meter
(``dra.cel.costs``), declared for cel-expr-python (``environment`` builds the environments)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from cel_expr_python import cel

from dra.cel import comprehensions, lists, network, strings
from dra.cel.costs import INTERNAL_FUNCTIONS

__all__ = [
    "INDEX_DECLARATIONS",
    "comprehension_functions",
    "internal_functions",
    "list_functions",
    "network_functions",
    "string_functions",
]


COMPARABLE = ("int", "uint", "double", "bool", "duration", "timestamp", "string", "bytes")
SUMMABLE = ("int", "uint", "double", "duration")


def index_declaration(alias: str) -> str:
    """YAML for ``list<A>.alias(A)`` (a type parameter, which only the config can declare) and
    the string overloads of the renamed ``indexOf``/``lastIndexOf`` (see :mod:`dra.cel.lists`)."""
    param = "{type_name: A, is_type_param: true}"
    return (
        f"  - name: {alias}\n    overloads:\n"
        f"      - id: list_a_{alias}_int\n        target: {{type_name: list, params: [{param}]}}\n"
        f"        args: [{param}]\n        return: {{type_name: int}}\n"
        f"      - id: string_{alias}_string\n        target: {{type_name: string}}\n"
        "        args: [{type_name: string}]\n        return: {type_name: int}\n"
        f"      - id: string_{alias}_string_int\n        target: {{type_name: string}}\n"
        "        args: [{type_name: string}, {type_name: int}]\n        return: {type_name: int}\n"
    )


INDEX_DECLARATIONS = (
    "functions:\n"
    + "".join(map(index_declaration, lists.INDEX_RENAMED.values()))
    + comprehensions.CHECKING_DECLARATIONS
)


def list_functions(overload: Callable[..., Any], internal: bool) -> list[Any]:
    """Kubernetes' lists library. The checking environment declares upstream's overloads; the
    evaluation environment adds what the rewrites of :mod:`dra.cel.lists` call, and implements
    the renamed ``indexOf``/``lastIndexOf`` by runtime kind (the checker saw the typed ones)."""
    types = cel.Type
    kinds = {name: getattr(types, name.upper()) for name in COMPARABLE}
    dyn_list = types.List(types.DYN)

    def typed(name: str, result: Callable[[Any], Any], names: tuple[str, ...]) -> Any:
        # no implementation: the evaluated text calls the typed picks instead (dra.cel.lists)
        return cel.FunctionDecl(
            name,
            [
                overload(
                    f"list_{kind}_{name}", result(kinds[kind]), [types.List(kinds[kind])], True
                )
                for kind in names
            ],
        )

    sorted_overloads = [
        overload(
            f"list_{kind}_is_sorted_bool",
            types.BOOL,
            [types.List(kinds[kind])],
            True,
            lists.is_sorted if index == 0 else None,  # one implementation per runtime kind
        )
        for index, kind in enumerate(COMPARABLE)
    ]
    functions = [
        cel.FunctionDecl(
            lists.RANGE_ALIAS,
            [
                overload(
                    f"{lists.RANGE_ALIAS}_int",
                    types.List(types.INT),
                    [types.INT],
                    False,
                    lists.lists_range if internal else None,
                )
            ],
        ),
        cel.FunctionDecl("isSorted", sorted_overloads),
        typed("sum", lambda kind: kind, SUMMABLE),
        typed("min", lambda kind: kind, COMPARABLE),
        typed("max", lambda kind: kind, COMPARABLE),
    ]
    if not internal:
        return functions
    string, integer = types.STRING, types.INT
    item_kinds = [*kinds.values(), dyn_list, types.Map(types.DYN, types.DYN), types.NULL]
    for name, alias in lists.INDEX_RENAMED.items():
        on_list = lists.index_of if name == "indexOf" else lists.last_index_of
        on_string = lists.string_index_of if name == "indexOf" else lists.string_last_index_of
        functions.append(
            cel.FunctionDecl(
                alias,
                [
                    # cel-cpp matches a dyn parameter to no runtime kind: one overload per kind.
                    *(
                        overload(f"list_{alias}_{index}", integer, [dyn_list, kind], True, on_list)
                        for index, kind in enumerate(item_kinds)
                    ),
                    overload(f"string_{alias}", integer, [string, string], True, on_string),
                    overload(
                        f"string_{alias}_int", integer, [string, string, integer], True, on_string
                    ),
                ],
            )
        )
    for name, implementation in (
        ("dra_list_min", lists.minimum_index),
        ("dra_list_max", lists.maximum_index),
    ):
        functions.append(
            cel.FunctionDecl(name, [overload(name, integer, [dyn_list], False, implementation)])
        )
    for name, result, unsigned in (
        ("dra_list_sum", types.DYN, False),
        ("dra_list_sum_uint", types.UINT, True),
        ("dra_list_sum_duration", types.DURATION, False),
    ):
        functions.append(
            cel.FunctionDecl(
                name,
                [
                    overload(
                        name,
                        result,
                        [dyn_list],
                        False,
                        lambda values, unsigned=unsigned: lists.sum_values(values, unsigned),
                    )
                ],
            )
        )
    return functions


def string_functions(overload: Callable[..., Any], internal: bool) -> list[Any]:
    """The renamed ``charAt``/``substring`` (:mod:`dra.cel.strings`): declared for checking,
    implemented for evaluation."""
    string, integer = cel.Type.STRING, cel.Type.INT
    at, sub = strings.RENAMED["charAt"], strings.RENAMED["substring"]

    def impl(function: Callable[..., Any]) -> Callable[..., Any] | None:
        return function if internal else None

    return [
        cel.FunctionDecl(
            at,
            [overload(f"string_{at}_int", string, [string, integer], True, impl(strings.char_at))],
        ),
        cel.FunctionDecl(
            sub,
            [
                overload(
                    f"string_{sub}_int", string, [string, integer], True, impl(strings.substring)
                ),
                overload(
                    f"string_{sub}_int_int",
                    string,
                    [string, integer, integer],
                    True,
                    impl(strings.substring),
                ),
            ],
        ),
    ]


def network_functions(overload: Callable[..., Any], internal: bool) -> list[Any]:
    """Kubernetes' IP, CIDR and URL libraries: abstract types when checking, maps carrying a
    canonical text when evaluating (see :mod:`dra.cel.network`)."""
    types = cel.Type
    symbols = {
        "string": types.STRING,
        "bool": types.BOOL,
        "int": types.INT,
        "uint": types.UINT,
        "double": types.DOUBLE,
        "bytes": types.BYTES,
        "timestamp": types.TIMESTAMP,
        "duration": types.DURATION,
        "query": types.Map(types.STRING, types.List(types.STRING)),
        "map": types.Map(types.DYN, types.DYN),
    }
    for symbol, name in network.TYPE_NAMES.items():
        symbols[symbol] = (
            types.Map(types.STRING, types.STRING) if internal else types.AbstractType(name)
        )
    signatures = network.SIGNATURES + (
        network.EVALUATED_SIGNATURES if internal else network.CHECKED_SIGNATURES
    )
    by_name: dict[str, list[Any]] = {}
    for name, identifier, parameters, result, member, implementation in signatures:
        by_name.setdefault(name, []).append(
            overload(
                identifier,
                symbols[result],
                [symbols[parameter] for parameter in parameters],
                member,
                implementation if internal else None,
            )
        )
    return [cel.FunctionDecl(name, overloads) for name, overloads in by_name.items()]


def comprehension_functions(overload: Callable[..., Any]) -> list[Any]:
    """The map builders of the evaluated two-variable comprehensions (:mod:`dra.cel.comprehensions`;
    the checking environment declares their typed counterparts)."""
    types = cel.Type
    dyn_list, dyn_map = types.List(types.DYN), types.Map(types.DYN, types.DYN)
    return [
        cel.FunctionDecl(
            "dra_tmap_eval",
            [
                overload(
                    "dra_tmap_eval_list", dyn_map, [dyn_list], False, comprehensions.transform_map
                )
            ],
        ),
        cel.FunctionDecl(
            "dra_tmapentry_eval",
            [
                overload(
                    "dra_tmapentry_eval_list",
                    dyn_map,
                    [dyn_list],
                    False,
                    comprehensions.transform_map_entries,
                )
            ],
        ),
    ]


def internal_functions(overload: Callable[..., Any]) -> list[Any]:
    """The cost meter's functions (:mod:`dra.cel.costs`), for the evaluated text only."""
    types = cel.Type
    meter = INTERNAL_FUNCTIONS
    string, integer, boolean = types.STRING, types.INT, types.BOOL

    def declare(name: str, parameters: list[Any], result: Any = boolean) -> Any:
        return cel.FunctionDecl(name, [overload(name, result, parameters, False, meter[name])])

    return [
        declare("dra_cost_call", [string, types.List(types.DYN)]),
        declare("dra_cost_add", [integer]),
        declare("dra_cost_times", [integer, integer]),
        declare("dra_cost_loop", [integer, integer]),
        declare("dra_cost_step", [integer, integer]),
        declare("dra_cost_enter", [integer, integer], integer),
        declare("dra_cost_done", [integer, integer, integer, boolean]),
        cel.FunctionDecl(
            "dra_cost_replace",
            [
                overload(
                    "dra_cost_replace_string",
                    string,
                    [string, string, string],
                    False,
                    meter["dra_cost_replace"],
                ),
                overload(
                    "dra_cost_replace_string_int",
                    string,
                    [string, string, string, integer],
                    False,
                    meter["dra_cost_replace"],
                ),
            ],
        ),
    ]
