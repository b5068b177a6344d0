"""Kubernetes' IP, CIDR and URL CEL libraries (``k8s.io/apiserver/pkg/cel/library``: ``ip.go``,
``cidr.go``, ``urls.go``) on cel-cpp, with upstream's overloads, parsing rules, error messages
and cost charges.

**How the three types stay distinct.** cel-expr-python cannot declare a new object type with
values, but its ``cel.Type.AbstractType`` declares an opaque type the *checker* keeps apart
from every other: ``ip("1.2.3.4").getHost()`` or ``cidr("10.0.0.0/8").family()`` is a compile
error ("found no matching overload for 'getHost' applied to 'net.IP.()'"), as upstream. Python
cannot produce values of an abstract type, though, so the types live in the two environments
of :mod:`dra.cel.environment`:

* the checking environment declares ``net.IP``, ``net.CIDR`` and ``kubernetes.URL`` as
  abstract types (upstream's type names); the checked text is what decides types and errors;
* the evaluation environment, which every selector using these functions is evaluated in,
  carries each value as a one-entry ``map(string, string)`` whose key names its type and whose
  value is its canonical text: ``{"net.IP": "2001:db8::1"}``, ``{"net.CIDR": "10.0.0.1/8"}``
  (host bits kept, like ``netip.Prefix``), ``{"kubernetes.URL": <URL.String()>}``. CEL's map
  equality then *is* upstream's equality (``Addr ==``, ``Prefix ==``, ``URL.String() ==``).

Three constructs see through the representation and are rewritten in the evaluated text only:
``string(x)`` (cel-cpp refuses a second declaration of ``string``, so the checked text calls a
same-length alias declared with the standard overloads plus ``net.IP``/``net.CIDR``),
``type(x)`` (a network value's type is represented by its type name as a string, which is
what ``net.IP``/``net.CIDR`` evaluate to) and the identifiers ``net.IP``/``net.CIDR``.

Parsing is Go's (:mod:`dra.cel.goaddr`, :mod:`dra.cel.gourl`). A bad literal, ``ip("x")``,
is a runtime error as upstream (its base environment has no validator for these literals); a
valid constant ``ip("…")``/``cidr("…")`` is folded into its value in the evaluated text.
Costs are the meter's (:mod:`dra.cel.costs`, rules in :mod:`dra.cel.call_costs`: parsing
``ceil(0.1 · len)`` as upstream's ``CallCost``, ``ip.isCanonical`` twice that, ``containsIP``
/ ``containsCIDR`` by the prefix's size); the late rewrite runs on the metered text, so a
constant is folded only in selectors the meter leaves alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

from dra.cel.costs import Edit
from dra.cel.errors import CelRuntimeError
from dra.cel.goaddr import Address, GoParseError, Prefix, go_quote, parse_address, parse_prefix
from dra.cel.gourl import URL, parse_query, parse_url, strict_host_colons
from dra.cel.syntax import Call, Ident, Literal, Node, Select, children

__all__ = [
    "CHECKED_SIGNATURES",
    "EVALUATED_SIGNATURES",
    "RESERVED",
    "SIGNATURES",
    "STRING_ALIAS",
    "TYPE_NAMES",
    "TYPE_VARIABLES",
    "network_edits",
    "uses_network",
]

IP_TYPE = "net.IP"
CIDR_TYPE = "net.CIDR"
URL_TYPE = "kubernetes.URL"
# Symbolic type → upstream type name (the environment declares them as abstract types).
TYPE_NAMES = {"ip": IP_TYPE, "cidr": CIDR_TYPE, "url": URL_TYPE}
# Upstream declares these identifiers (the IP and CIDR libraries' ``cel.Variable``).
TYPE_VARIABLES = (IP_TYPE, CIDR_TYPE)
STRING_ALIAS = "dra_sg"  # as long as "string": positions in the checked text are kept
RESERVED = frozenset({STRING_ALIAS})
_STANDARD_STRING = ("int", "uint", "double", "bool", "bytes", "string", "timestamp", "duration")


# --- values ------------------------------------------------------------------------------------


def _unwrap(value: Any, kind: str, function: str) -> str:
    if isinstance(value, dict) and len(value) == 1 and kind in value:
        return str(value[kind])
    raise CelRuntimeError(f"no such overload: {function}")


@lru_cache(maxsize=4096)
def _address(text: str) -> Address:
    """Kubernetes' ``parseIPAddr``: Go's ParseAddr without zones or IPv4-mapped IPv6."""
    try:
        address = parse_address(text)
    except GoParseError as error:
        raise CelRuntimeError(
            f"IP Address {go_quote(text)} parse error during conversion from string: {error}"
        ) from None
    if address.zone:
        raise CelRuntimeError(f"IP address {go_quote(text)} with zone value is not allowed")
    if address.is_4in6():
        raise CelRuntimeError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return address


@lru_cache(maxsize=4096)
def _prefix(text: str) -> Prefix:
    """Kubernetes' ``parseCIDR``; ``cidr()`` adds its own prefix to the message."""
    try:
        prefix = parse_prefix(text)
    except GoParseError as error:
        raise CelRuntimeError(
            f"network address parse error during conversion from string: {error}"
        ) from None
    if prefix.address.is_4in6():
        raise CelRuntimeError(f"IPv4-mapped IPv6 address {go_quote(text)} is not allowed")
    return prefix


def _ip_value(address: Address) -> dict[str, str]:
    return {IP_TYPE: str(address)}


def _cidr_value(prefix: Prefix) -> dict[str, str]:
    return {CIDR_TYPE: str(prefix)}


def _stored_ip(value: Any, function: str) -> Address:
    return _address(_unwrap(value, IP_TYPE, function))


def _stored_cidr(value: Any, function: str) -> Prefix:
    return _prefix(_unwrap(value, CIDR_TYPE, function))


def string_to_ip(text: str) -> dict[str, str]:
    return _ip_value(_address(text))


def is_ip(text: str) -> bool:
    try:
        _address(text)
    except CelRuntimeError:
        return False
    return True


def ip_is_canonical(text: str) -> bool:
    return str(_address(text)) == text


def _ip_predicate(name: str, test: Callable[[Address], bool]) -> Callable[[Any], bool]:
    def call(value: Any) -> bool:
        return test(_stored_ip(value, name))

    return call


def family(value: Any) -> int:
    return 4 if _stored_ip(value, "family").bits == 32 else 6


def string_to_cidr(text: str) -> dict[str, str]:
    try:
        return _cidr_value(_prefix(text))
    except CelRuntimeError as error:
        raise CelRuntimeError(
            f"network address parse error during conversion from string: {error}"
        ) from None


def is_cidr(text: str) -> bool:
    try:
        _prefix(text)
    except CelRuntimeError:
        return False
    return True


def contains_ip(value: Any, other: Any) -> bool:
    prefix = _stored_cidr(value, "containsIP")
    if isinstance(other, str):
        address = _address(other)
    else:
        address = _stored_ip(other, "containsIP")
    return prefix.contains(address)


def contains_cidr(value: Any, other: Any) -> bool:
    prefix = _stored_cidr(value, "containsCIDR")
    if isinstance(other, str):
        try:
            inner = _prefix(other)
        except CelRuntimeError as error:
            raise CelRuntimeError(
                f"network address parse error during conversion from string: {error}"
            ) from None
    else:
        inner = _stored_cidr(other, "containsCIDR")
    if inner.address.bits != prefix.address.bits:
        return False
    # Upstream: ``Overlaps(inner) && Bits() <= inner.Bits()``. With the receiver the shorter
    # prefix, netip's Overlaps masks both addresses to the receiver's length and compares.
    same_network = Prefix(inner.address, prefix.length).masked() == prefix.masked()
    return same_network and prefix.length <= inner.length


def cidr_ip(value: Any) -> dict[str, str]:
    return _ip_value(_stored_cidr(value, "ip").address)


def masked(value: Any) -> dict[str, str]:
    return _cidr_value(_stored_cidr(value, "masked").masked())


def prefix_length(value: Any) -> int:
    return _stored_cidr(value, "prefixLength").length


def string_to_url(text: str) -> dict[str, str]:
    try:
        # ParseRequestURI decides validity; Parse (which splits off a fragment) the value.
        parse_url(text, request_uri=True)
        url = parse_url(text, request_uri=False)
    except GoParseError as error:
        raise CelRuntimeError(f"URL parse error during conversion from string: {error}") from None
    return {URL_TYPE: url.string().decode("utf-8", "replace")}


def is_url(text: str) -> bool:
    try:
        parse_url(text, request_uri=True)
    except GoParseError:
        return False
    return True


def _stored_url_value(serialized: str) -> URL:
    return _parsed_url_value(serialized, strict_host_colons())


@lru_cache(maxsize=4096)
def _parsed_url_value(serialized: str, strict: bool) -> URL:
    # URL.String() parses back to the same accessors' results (under the same Go rules).
    return parse_url(serialized, request_uri=False)


def _url_accessor(name: str, read: Callable[[URL], bytes]) -> Callable[[Any], str]:
    def call(value: Any) -> str:
        url = _stored_url_value(_unwrap(value, URL_TYPE, name))
        return read(url).decode("utf-8", "replace")

    return call


def get_query(value: Any) -> dict[str, list[str]]:
    return parse_query(_stored_url_value(_unwrap(value, URL_TYPE, "getQuery")).raw_query)


def network_string(value: Any) -> str:
    """``string()`` of an IP or CIDR (any other map has no ``string`` overload upstream)."""
    if isinstance(value, dict) and len(value) == 1:
        if IP_TYPE in value:
            return str(value[IP_TYPE])
        if CIDR_TYPE in value:
            return str(value[CIDR_TYPE])
    raise CelRuntimeError("no such overload: string")


def network_type(value: Any) -> str:
    """The type name of a network value (how its ``type()`` is represented), else ""."""
    if isinstance(value, dict) and len(value) == 1:
        key = next(iter(value))
        if key in (IP_TYPE, CIDR_TYPE, URL_TYPE):
            return str(key)
    return ""


# (function, overload id, parameter types, result type, member, implementation). Types are
# symbols the environment maps: "ip"/"cidr"/"url" (abstract types when checking, maps when
# evaluating), "query" = map(string, list(string)), "map" = map(dyn, dyn), CEL's own names.
Signature = tuple[str, str, tuple[str, ...], str, bool, Callable[..., Any] | None]

SIGNATURES: tuple[Signature, ...] = (
    ("ip", "string_to_ip", ("string",), "ip", False, string_to_ip),
    ("isIP", "is_ip", ("string",), "bool", False, is_ip),
    ("ip.isCanonical", "ip_is_canonical", ("string",), "bool", False, ip_is_canonical),
    ("family", "ip_family", ("ip",), "int", True, family),
    *(
        (name, identifier, ("ip",), "bool", True, _ip_predicate(name, test))
        for name, identifier, test in (
            ("isUnspecified", "ip_is_unspecified", Address.is_unspecified),
            ("isLoopback", "ip_is_loopback", Address.is_loopback),
            ("isLinkLocalMulticast", "ip_is_link_local_multicast", Address.is_link_local_multicast),
            ("isLinkLocalUnicast", "ip_is_link_local_unicast", Address.is_link_local_unicast),
            ("isGlobalUnicast", "ip_is_global_unicast", Address.is_global_unicast),
        )
    ),
    ("cidr", "string_to_cidr", ("string",), "cidr", False, string_to_cidr),
    ("isCIDR", "is_cidr", ("string",), "bool", False, is_cidr),
    ("containsIP", "cidr_contains_ip_string", ("cidr", "string"), "bool", True, contains_ip),
    ("containsIP", "cidr_contains_ip_ip", ("cidr", "ip"), "bool", True, contains_ip),
    ("containsCIDR", "cidr_contains_cidr_string", ("cidr", "string"), "bool", True, contains_cidr),
    ("containsCIDR", "cidr_contains_cidr", ("cidr", "cidr"), "bool", True, contains_cidr),
    ("ip", "cidr_ip", ("cidr",), "ip", True, cidr_ip),
    ("prefixLength", "cidr_prefix_length", ("cidr",), "int", True, prefix_length),
    ("masked", "cidr_masked", ("cidr",), "cidr", True, masked),
    ("url", "string_to_url", ("string",), "url", False, string_to_url),
    ("isURL", "is_url_string", ("string",), "bool", False, is_url),
    *(
        (name, identifier, ("url",), "string", True, _url_accessor(name, read))
        for name, identifier, read in (
            ("getScheme", "url_get_scheme", lambda url: url.scheme),
            ("getHost", "url_get_host", lambda url: url.host),
            ("getHostname", "url_get_hostname", URL.hostname),
            ("getPort", "url_get_port", URL.port),
            ("getEscapedPath", "url_get_escaped_path", URL.escaped_path),
        )
    ),
    ("getQuery", "url_get_query", ("url",), "query", True, get_query),
)

# Only the checking environment: ``string`` with the standard overloads and IP/CIDR's.
CHECKED_SIGNATURES: tuple[Signature, ...] = tuple(
    (STRING_ALIAS, f"{STRING_ALIAS}_{kind}", (kind,), "string", False, None)
    for kind in (*_STANDARD_STRING, "ip", "cidr")
)

# Only the evaluation environment: what the rewritten text calls.
EVALUATED_SIGNATURES: tuple[Signature, ...] = (
    ("dra_net_string", "dra_net_string_map", ("map",), "string", False, network_string),
    ("dra_net_type", "dra_net_type_map", ("map",), "string", False, network_type),
)


# --- the checked and evaluated texts -----------------------------------------------------------

_NETWORK_NAME = re.compile(r"\b(?:ip|cidr|url|isIP|isCIDR|isURL|net)\b")
_CONSTRUCTORS = frozenset({"ip", "cidr", "url"})
_TYPE_IDENTIFIERS = {"IP": IP_TYPE, "CIDR": CIDR_TYPE}


def uses_network(text: str) -> bool:
    """Whether a selector may use these libraries (then it is evaluated in the evaluation
    environment, where network values exist). A false positive only costs a compile."""
    return _NETWORK_NAME.search(text) is not None


def _folded_constant(node: Node) -> str | None:
    """The map literal a valid constant ``ip("…")``/``cidr("…")`` evaluates to (saves a call
    per evaluation; an invalid literal keeps its runtime error)."""
    if not (
        isinstance(node, Call)
        and node.target is None
        and node.function in ("ip", "cidr")
        and len(node.args) == 1
        and isinstance(node.args[0], Literal)
        and node.args[0].kind == "string"
    ):
        return None
    text = str(node.args[0].value)
    try:
        value = _ip_value(_address(text)) if node.function == "ip" else _cidr_value(_prefix(text))
    except CelRuntimeError:
        return None
    ((kind, canonical),) = value.items()
    return f'{{"{kind}": "{canonical}"}}'  # canonical texts are [0-9a-f:./] only


def network_edits(text: str, tree: Node) -> tuple[list[Edit], list[Edit]]:
    """(edits of the checked text, edits of the evaluated text) — see the module doc.

    ``string(x)``/``type(x)`` are rewritten only where a network value can exist at all, i.e.
    where the selector calls ``ip``, ``cidr`` or ``url``.
    """
    nodes: list[Node] = []
    stack = [tree]
    while stack:
        node = stack.pop()
        nodes.append(node)
        stack.extend(children(node))
    constructs = any(isinstance(node, Call) and node.function in _CONSTRUCTORS for node in nodes)
    checked: list[Edit] = []
    evaluated: list[Edit] = []
    names = 0
    for node in nodes:
        if (
            isinstance(node, Select)
            and not node.optional
            and isinstance(node.operand, Ident)
            and node.operand.name == "net"
            and node.field in _TYPE_IDENTIFIERS
        ):
            evaluated.append((node.start, node.end, f'dyn("{_TYPE_IDENTIFIERS[node.field]}")', 0))
            continue
        folded = _folded_constant(node)
        if folded is not None:
            evaluated.append((node.start, node.end, folded, 0))
            continue
        if not (
            constructs
            and isinstance(node, Call)
            and node.target is None
            and node.function in ("string", "type")
            and len(node.args) == 1
            and text.startswith(node.function, node.start)
        ):
            continue
        names += 1
        name = f"dra_net_{names}"
        argument = node.args[0]
        if node.function == "string":
            checked.append((node.start, node.start + len("string"), STRING_ALIAS, 0))
            result = f"type({name}) == map ? dra_net_string({name}) : string({name})"
        else:
            result = (
                f'type({name}) == map && dra_net_type({name}) != "" ? '
                f"dyn(dra_net_type({name})) : dyn(type({name}))"
            )
        evaluated.append((node.start, argument.start, f"cel.bind({name}, dyn(", 0))
        evaluated.append((argument.end, node.end, f"), {result})", 0))
    return checked, evaluated
