"""Go's ``net/url`` parser as Kubernetes' URL CEL library uses it: ``ParseRequestURI`` decides
validity, ``Parse`` gives the value, ``URL.String()`` its identity, and the accessors read
``Host``, ``Hostname()``, ``Port()``, ``EscapedPath()`` and ``Query()`` — with Go's error texts.

Followed: the newest net/url, whose rules Kubernetes 1.34–1.36 builds get with their Go patch
releases (a host's IP-literal must be a bracketed IPv6 address; at most 10,000 query
parameters are parsed, more give an empty query), except one rule that follows the Go release
each Kubernetes minor is built with: Go 1.26 (Kubernetes 1.36) refuses a colon in a host
other than the one before its port (``http://x:8080:90/``, ``http://::1/``: "invalid port
":8080:90" after host"), where Go 1.24 and 1.25 (Kubernetes 1.34, 1.35) read the last colon
as the port's. :func:`url_rules` chooses; the newest is the default.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from contextvars import ContextVar
from dataclasses import dataclass

from dra.cel.goaddr import HEX_DIGITS, GoParseError, go_quote, parse_address

__all__ = ["URL", "parse_query", "parse_url", "strict_host_colons", "url_rules"]

# Go 1.26's rule for colons in a host (see the module docstring); per evaluation.
_STRICT_HOST_COLONS: ContextVar[bool] = ContextVar("strict_host_colons", default=True)


def strict_host_colons() -> bool:
    """Whether the rules in force are Go 1.26's (only the port's colon in a host)."""
    return _STRICT_HOST_COLONS.get()


@contextlib.contextmanager
def url_rules(strict_host_colons: bool) -> Iterator[None]:
    """Parse with Go 1.26's host rule (True) or Go 1.25's and older (False) meanwhile."""
    token = _STRICT_HOST_COLONS.set(strict_host_colons)
    try:
        yield
    finally:
        _STRICT_HOST_COLONS.reset(token)


_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY_COMPONENT, _FRAGMENT = range(1, 8)
_QUERY_PARAMETER_LIMIT = 10_000


def _should_escape(byte: int, mode: int) -> bool:
    character = chr(byte)
    if character.isascii() and character.isalnum():
        return False
    if mode in (_HOST, _ZONE) and character in "!$&'()*+,;=:[]<>\"":
        return False
    if character in "-_.~":
        return False
    if character in "$&+,/:;=?@":
        if mode == _PATH:
            return character == "?"
        if mode == _PATH_SEGMENT:
            return character in "/;,?"
        if mode == _USER_PASSWORD:
            return character in "@/?:"
        if mode == _QUERY_COMPONENT:
            return True
        if mode == _FRAGMENT:
            return False
    # The fragment also keeps some sub-delims; everything else is escaped.
    return not (mode == _FRAGMENT and character in "!()*")


def _is_hex(byte: int) -> bool:
    return chr(byte) in HEX_DIGITS


def _unescape(text: bytes, mode: int) -> bytes:
    count = 0
    has_plus = False
    index = 0
    while index < len(text):
        byte = text[index]
        if byte == 0x25:  # %
            count += 1
            if (
                index + 2 >= len(text)
                or not _is_hex(text[index + 1])
                or not _is_hex(text[index + 2])
            ):
                raise GoParseError("invalid URL escape " + go_quote(_text(text[index : index + 3])))
            escape = text[index : index + 3]
            if mode == _HOST and HEX_DIGITS[chr(text[index + 1])] < 8 and escape != b"%25":
                raise GoParseError("invalid URL escape " + go_quote(_text(escape)))
            if mode == _ZONE:
                value = HEX_DIGITS[chr(text[index + 1])] << 4 | HEX_DIGITS[chr(text[index + 2])]
                if escape != b"%25" and value != 0x20 and _should_escape(value, _HOST):
                    raise GoParseError("invalid URL escape " + go_quote(_text(escape)))
            index += 3
        elif byte == 0x2B:  # +
            has_plus = mode == _QUERY_COMPONENT
            index += 1
        else:
            if mode in (_HOST, _ZONE) and byte < 0x80 and _should_escape(byte, mode):
                raise GoParseError("invalid character " + go_quote(chr(byte)) + " in host name")
            index += 1
    if count == 0 and not has_plus:
        return text
    out = bytearray()
    index = 0
    while index < len(text):
        byte = text[index]
        if byte == 0x25:
            out.append(HEX_DIGITS[chr(text[index + 1])] << 4 | HEX_DIGITS[chr(text[index + 2])])
            index += 3
            continue
        out.append(0x20 if byte == 0x2B and mode == _QUERY_COMPONENT else byte)
        index += 1
    return bytes(out)


def _escape(text: bytes, mode: int) -> bytes:
    out = bytearray()
    for byte in text:
        if byte == 0x20 and mode == _QUERY_COMPONENT:
            out.append(0x2B)
        elif _should_escape(byte, mode):
            out += f"%{byte:02X}".encode()
        else:
            out.append(byte)
    return bytes(out)


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace")


def _valid_encoded(text: bytes, mode: int) -> bool:
    return all(chr(byte) in "!$&'()*+,;=:@[]%" or not _should_escape(byte, mode) for byte in text)


def _valid_optional_port(port: bytes) -> bool:
    if port == b"":
        return True
    return port[:1] == b":" and all(0x30 <= byte <= 0x39 for byte in port[1:])


@dataclass(slots=True)
class URL:
    """``url.URL``: the fields the CEL accessors and ``String()`` read (bytes, as in Go)."""

    scheme: bytes = b""
    opaque: bytes = b""
    user: bytes | None = None  # the escaped ``userinfo`` as String() writes it
    host: bytes = b""
    path: bytes = b""
    raw_path: bytes = b""
    omit_host: bool = False
    force_query: bool = False
    raw_query: bytes = b""
    fragment: bytes = b""
    raw_fragment: bytes = b""

    def escaped_path(self) -> bytes:
        if self.raw_path and _valid_encoded(self.raw_path, _PATH):
            try:
                if _unescape(self.raw_path, _PATH) == self.path:
                    return self.raw_path
            except GoParseError:
                pass
        if self.path == b"*":
            return b"*"
        return _escape(self.path, _PATH)

    def _escaped_fragment(self) -> bytes:
        if self.raw_fragment and _valid_encoded(self.raw_fragment, _FRAGMENT):
            try:
                if _unescape(self.raw_fragment, _FRAGMENT) == self.fragment:
                    return self.raw_fragment
            except GoParseError:
                pass
        return _escape(self.fragment, _FRAGMENT)

    def string(self) -> bytes:
        """``URL.String()``."""
        out = bytearray()
        if self.scheme:
            out += self.scheme + b":"
        if self.opaque:
            out += self.opaque
        else:
            if (self.scheme or self.host or self.user is not None) and not (
                self.omit_host and not self.host and self.user is None
            ):
                if self.host or self.path or self.user is not None:
                    out += b"//"
                if self.user is not None:
                    out += self.user + b"@"
                if self.host:
                    out += _escape(self.host, _HOST)
            path = self.escaped_path()
            if path and path[:1] != b"/" and self.host:
                out += b"/"
            if not out and b":" in path.split(b"/", 1)[0]:
                out += b"./"
            out += path
        if self.force_query or self.raw_query:
            out += b"?" + self.raw_query
        if self.fragment:
            out += b"#" + self._escaped_fragment()
        return bytes(out)

    def hostname(self) -> bytes:
        return _split_host_port(self.host)[0]

    def port(self) -> bytes:
        return _split_host_port(self.host)[1]


def _split_host_port(host_port: bytes) -> tuple[bytes, bytes]:
    host, port = host_port, b""
    colon = host.rfind(b":")
    if colon != -1 and _valid_optional_port(host[colon:]):
        host, port = host[:colon], host[colon + 1 :]
    if host.startswith(b"[") and host.endswith(b"]"):
        host = host[1:-1]
    return host, port


def _scheme(raw: bytes) -> tuple[bytes, bytes]:
    for index, byte in enumerate(raw):
        character = chr(byte)
        if character.isascii() and character.isalpha():
            continue
        if character.isascii() and character.isdigit() or character in "+-.":
            if index == 0:
                return b"", raw
            continue
        if character == ":":
            if index == 0:
                raise GoParseError("missing protocol scheme")
            return raw[:index], raw[index + 1 :]
        return b"", raw
    return b"", raw


def _valid_userinfo(text: bytes) -> bool:
    return all(
        chr(byte).isascii() and chr(byte).isalnum() or chr(byte) in "-._:~!$&'()*+,;=%@"
        for byte in text
    )


def _parse_host(host: bytes) -> bytes:
    bracket = host.rfind(b"[")
    if bracket > 0:
        raise GoParseError("invalid IP-literal")
    if bracket == 0:
        close = host.rfind(b"]")
        if close < 0:
            raise GoParseError("missing ']' in host")
        colon_port = host[close + 1 :]
        if not _valid_optional_port(colon_port):
            raise GoParseError(f"invalid port {go_quote(_text(colon_port))} after host")
        colon_port = _unescape(colon_port, _HOST)
        name = host[1:close]
        zone = name.find(b"%25")
        if zone >= 0:
            name = _unescape(name[:zone], _HOST) + _unescape(name[zone:], _ZONE)
        else:
            name = _unescape(name, _HOST)
        try:
            address = parse_address(_text(name))
        except GoParseError as error:
            raise GoParseError(f"invalid host: {error}") from None
        if address.bits == 32:
            raise GoParseError("invalid IP-literal")
        return b"[" + name + b"]" + colon_port
    colon = host.find(b":") if _STRICT_HOST_COLONS.get() else host.rfind(b":")
    if colon != -1 and not _valid_optional_port(host[colon:]):
        raise GoParseError(f"invalid port {go_quote(_text(host[colon:]))} after host")
    return _unescape(host, _HOST)


def _parse_authority(authority: bytes) -> tuple[bytes | None, bytes]:
    at = authority.rfind(b"@")
    host = _parse_host(authority if at < 0 else authority[at + 1 :])
    if at < 0:
        return None, host
    userinfo = authority[:at]
    if not _valid_userinfo(userinfo):
        raise GoParseError("net/url: invalid userinfo")
    if b":" not in userinfo:
        user = _escape(_unescape(userinfo, _USER_PASSWORD), _USER_PASSWORD)
    else:
        name, password = userinfo.split(b":", 1)
        user = (
            _escape(_unescape(name, _USER_PASSWORD), _USER_PASSWORD)
            + b":"
            + _escape(_unescape(password, _USER_PASSWORD), _USER_PASSWORD)
        )
    return user, host


def _parse(raw: bytes, via_request: bool) -> URL:
    if any(byte < 0x20 or byte == 0x7F for byte in raw):
        raise GoParseError("net/url: invalid control character in URL")
    if raw == b"" and via_request:
        raise GoParseError("empty url")
    url = URL()
    if raw == b"*":
        url.path = b"*"
        return url
    scheme, rest = _scheme(raw)
    url.scheme = scheme.lower()
    if rest.endswith(b"?") and rest.count(b"?") == 1:
        url.force_query = True
        rest = rest[:-1]
    elif b"?" in rest:
        rest, url.raw_query = rest.split(b"?", 1)
    if not rest.startswith(b"/"):
        if url.scheme:
            url.opaque = rest
            return url
        if via_request:
            raise GoParseError("invalid URI for request")
        if b":" in rest.split(b"/", 1)[0]:
            raise GoParseError("first path segment in URL cannot contain colon")
    if (url.scheme or not via_request and not rest.startswith(b"///")) and rest.startswith(b"//"):
        authority, rest = rest[2:], b""
        slash = authority.find(b"/")
        if slash >= 0:
            authority, rest = authority[:slash], authority[slash:]
        url.user, url.host = _parse_authority(authority)
    elif url.scheme and rest.startswith(b"/"):
        url.omit_host = True
    url.path = _unescape(rest, _PATH)
    url.raw_path = b"" if _escape(url.path, _PATH) == rest else rest
    return url


def parse_url(text: str, request_uri: bool) -> URL:
    """``url.ParseRequestURI`` (``request_uri``) or ``url.Parse``; errors as Go words them."""
    raw = text.encode("utf-8", "surrogatepass")
    if request_uri:
        try:
            return _parse(raw, True)
        except GoParseError as error:
            raise GoParseError(f"parse {go_quote(text)}: {error}") from None
    head, has_fragment, fragment = raw.partition(b"#")
    try:
        url = _parse(head, False)
    except GoParseError as error:
        raise GoParseError(f"parse {go_quote(_text(head))}: {error}") from None
    if has_fragment and fragment:
        try:
            url.fragment = _unescape(fragment, _FRAGMENT)
        except GoParseError as error:
            raise GoParseError(f"parse {go_quote(text)}: {error}") from None
        url.raw_fragment = b"" if _escape(url.fragment, _FRAGMENT) == fragment else fragment
    return url


def parse_query(query: bytes) -> dict[str, list[str]]:
    """``url.ParseQuery`` with its error ignored, as ``URL.Query()`` does."""
    values: dict[str, list[str]] = {}
    if query.count(b"&") + 1 > _QUERY_PARAMETER_LIMIT:
        return values
    for part in query.split(b"&") if query else []:
        if b";" in part or part == b"":
            continue
        key, _, value = part.partition(b"=")
        try:
            key, value = _unescape(key, _QUERY_COMPONENT), _unescape(value, _QUERY_COMPONENT)
        except GoParseError:
            continue
        values.setdefault(_text(key), []).append(_text(value))
    return values
