"""Go's address and URL parsers as Kubernetes' CEL libraries use them: ``net/netip``'s
``ParseAddr``/``ParsePrefix`` and ``net/url``'s ``Parse``/``ParseRequestURI``, with their
error texts, so ``ip()``, ``cidr()`` and ``url()`` accept, reject and report exactly as upstream.

Followed: the releases Kubernetes 1.34–1.36 are built with, security fixes included (an IPv6
group of more than four hex digits is an error; a URL host's IP-literal must be a bracketed
IPv6 address; at most 10,000 query parameters are parsed).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "Address",
    "GoParseError",
    "Prefix",
    "URL",
    "go_quote",
    "parse_address",
    "parse_prefix",
    "parse_query",
    "parse_url",
]


class GoParseError(ValueError):
    """A parse failure, with Go's message."""


def go_quote(text: str) -> str:
    """``strconv.Quote``: a double-quoted Go string literal."""
    out = ['"']
    for character in text:
        code = ord(character)
        if character in ('"', "\\"):
            out.append("\\" + character)
        elif character == "\n":
            out.append("\\n")
        elif character == "\t":
            out.append("\\t")
        elif character == "\r":
            out.append("\\r")
        elif character == "\a":
            out.append("\\a")
        elif character == "\b":
            out.append("\\b")
        elif character == "\f":
            out.append("\\f")
        elif character == "\v":
            out.append("\\v")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif 0xD800 <= code <= 0xDFFF:
            out.append("\\ufffd")  # Go sees such input as invalid UTF-8
        elif not character.isprintable() and code > 0x7F:
            out.append(f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}")
        else:
            out.append(character)
    out.append('"')
    return "".join(out)


# --- net/netip ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Address:
    """A parsed address: 32 or 128 bits, and an IPv6 zone (``netip.Addr``)."""

    bits: int
    value: int
    zone: str = ""

    def is_4in6(self) -> bool:
        return self.bits == 128 and self.value >> 32 == 0xFFFF

    def _unmapped(self) -> Address:
        return Address(32, self.value & 0xFFFFFFFF) if self.is_4in6() else self

    def group(self, index: int) -> int:
        """The ``index``-th 16-bit group of the 128-bit form (``v6u16``)."""
        value = self.value if self.bits == 128 else 0xFFFF00000000 | self.value
        return (value >> (16 * (7 - index))) & 0xFFFF

    def octet(self, index: int) -> int:
        return (self.value >> (8 * (3 - index))) & 0xFF

    def __str__(self) -> str:
        if self.bits == 32:
            return ".".join(str(self.octet(index)) for index in range(4))
        if self.is_4in6():
            text = "::ffff:" + str(self._unmapped())
        else:
            text = self._string6()
        return text + ("%" + self.zone if self.zone else "")

    def _string6(self) -> str:
        zero_start, zero_end = 255, 255
        for index in range(8):
            end = index
            while end < 8 and self.group(end) == 0:
                end += 1
            if end - index >= 2 and end - index > zero_end - zero_start:
                zero_start, zero_end = index, end
        parts: list[str] = []
        index = 0
        while index < 8:
            if index == zero_start:
                parts.append("::")
                index = zero_end
                if index >= 8:
                    break
            elif index > 0:
                parts.append(":")
            parts.append(f"{self.group(index):x}")
            index += 1
        return "".join(parts)

    def is_unspecified(self) -> bool:
        return self.value == 0 and not self.zone

    def is_loopback(self) -> bool:
        address = self._unmapped()
        if address.bits == 32:
            return address.octet(0) == 127
        return address.value == 1

    def is_multicast(self) -> bool:
        address = self._unmapped()
        if address.bits == 32:
            return address.octet(0) & 0xF0 == 0xE0
        return address.value >> 120 == 0xFF

    def is_link_local_multicast(self) -> bool:
        address = self._unmapped()
        if address.bits == 32:
            return address.octet(0) == 224 and address.octet(1) == 0 and address.octet(2) == 0
        return address.group(0) & 0xFF0F == 0xFF02

    def is_link_local_unicast(self) -> bool:
        address = self._unmapped()
        if address.bits == 32:
            return address.octet(0) == 169 and address.octet(1) == 254
        return address.group(0) & 0xFFC0 == 0xFE80

    def is_global_unicast(self) -> bool:
        address = self._unmapped()
        if address.bits == 32 and address.value in (0, 0xFFFFFFFF):
            return False
        if address.bits == 128 and address.value == 0 and not address.zone:
            return False
        return not (
            address.is_loopback() or address.is_multicast() or address.is_link_local_unicast()
        )


def _address_error(text: str, message: str, at: str = "") -> GoParseError:
    suffix = f" (at {go_quote(at)})" if at else ""
    return GoParseError(f"ParseAddr({go_quote(text)}): {message}{suffix}")


def _ipv4_fields(whole: str, part: str) -> int:
    value = position = digits = 0
    fields = [0, 0, 0, 0]
    for index, character in enumerate(part):
        if "0" <= character <= "9":
            if digits == 1 and value == 0:
                raise _address_error(whole, "IPv4 field has octet with leading zero")
            value = value * 10 + ord(character) - 48
            digits += 1
            if value > 255:
                raise _address_error(whole, "IPv4 field has value >255")
        elif character == ".":
            if index == 0 or index == len(part) - 1 or part[index - 1] == ".":
                raise _address_error(whole, "IPv4 field must have at least one digit", part[index:])
            if position == 3:
                raise _address_error(whole, "IPv4 address too long")
            fields[position] = value
            position += 1
            value = digits = 0
        else:
            raise _address_error(whole, "unexpected character", part[index:])
    if position < 3:
        raise _address_error(whole, "IPv4 address too short")
    fields[3] = value
    return fields[0] << 24 | fields[1] << 16 | fields[2] << 8 | fields[3]


_HEX = {character: int(character, 16) for character in "0123456789abcdefABCDEF"}


def _parse_ipv6(whole: str) -> Address:
    rest, zone = whole, ""
    if "%" in whole:
        rest, zone = whole.split("%", 1)
        if zone == "":
            raise _address_error(whole, "zone must be a non-empty string")
    groups = bytearray(16)
    ellipsis = -1
    if rest.startswith("::"):
        ellipsis = 0
        rest = rest[2:]
        if rest == "":
            return Address(128, 0, zone)
    index = 0
    while index < 16:
        offset = accumulated = 0
        while offset < len(rest) and rest[offset] in _HEX:
            accumulated = (accumulated << 4) + _HEX[rest[offset]]
            if offset > 3:
                raise _address_error(whole, "each group must have 4 or less digits", rest)
            if accumulated > 0xFFFF:
                raise _address_error(whole, "IPv6 field has value >=2^16", rest)
            offset += 1
        if offset == 0:
            raise _address_error(
                whole, "each colon-separated field must have at least one digit", rest
            )
        if offset < len(rest) and rest[offset] == ".":
            if ellipsis < 0 and index != 12:
                raise _address_error(
                    whole,
                    "embedded IPv4 address must replace the final 2 fields of the address",
                    rest,
                )
            if index + 4 > 16:
                raise _address_error(
                    whole,
                    "too many hex fields to fit an embedded IPv4 at the end of the address",
                    rest,
                )
            embedded = _ipv4_fields(whole, rest)
            groups[index : index + 4] = embedded.to_bytes(4, "big")
            rest = ""
            index += 4
            break
        groups[index] = accumulated >> 8
        groups[index + 1] = accumulated & 0xFF
        index += 2
        rest = rest[offset:]
        if rest == "":
            break
        if rest[0] != ":":
            raise _address_error(whole, "unexpected character, want colon", rest)
        if len(rest) == 1:
            raise _address_error(whole, "colon must be followed by more characters", rest)
        rest = rest[1:]
        if rest[0] == ":":
            if ellipsis >= 0:
                raise _address_error(whole, "multiple :: in address", rest)
            ellipsis = index
            rest = rest[1:]
            if rest == "":
                break
    if rest:
        raise _address_error(whole, "trailing garbage after address", rest)
    if index < 16:
        if ellipsis < 0:
            raise _address_error(whole, "address string too short")
        shift = 16 - index
        groups[ellipsis + shift : 16] = groups[ellipsis:index]
        groups[ellipsis : ellipsis + shift] = bytes(shift)
    elif ellipsis >= 0:
        raise _address_error(whole, "the :: must expand to at least one field of zeros")
    return Address(128, int.from_bytes(groups, "big"), zone)


def parse_address(text: str) -> Address:
    """``netip.ParseAddr``."""
    for character in text:
        if character == ".":
            return Address(32, _ipv4_fields(text, text))
        if character == ":":
            return _parse_ipv6(text)
        if character == "%":
            raise _address_error(text, "missing IPv6 address")
    raise _address_error(text, "unable to parse IP")


@dataclass(frozen=True, slots=True)
class Prefix:
    """``netip.Prefix``: an address (host bits kept) and a prefix length."""

    address: Address
    length: int

    def __str__(self) -> str:
        return f"{self.address}/{self.length}"

    def masked(self) -> Prefix:
        width = self.address.bits
        mask = ((1 << width) - 1) ^ ((1 << (width - self.length)) - 1)
        return Prefix(Address(width, self.address.value & mask), self.length)

    def contains(self, address: Address) -> bool:
        if address.zone or address.bits != self.address.bits:
            return False
        shift = self.address.bits - self.length
        return (address.value ^ self.address.value) >> shift == 0


def _prefix_error(text: str, message: str) -> GoParseError:
    return GoParseError(f"netip.ParsePrefix({go_quote(text)}): {message}")


def parse_prefix(text: str) -> Prefix:
    """``netip.ParsePrefix``."""
    slash = text.rfind("/")
    if slash < 0:
        raise _prefix_error(text, "no '/'")
    try:
        address = parse_address(text[:slash])
    except GoParseError as error:
        raise _prefix_error(text, str(error)) from None
    if address.zone:
        raise _prefix_error(text, "IPv6 zones cannot be present in a prefix")
    bits_text = text[slash + 1 :]
    bad_bits = _prefix_error(text, "bad bits after slash: " + go_quote(bits_text))
    if len(bits_text) > 1 and not "1" <= bits_text[0] <= "9":
        raise bad_bits
    digits = bits_text[1:] if bits_text[:1] in ("+", "-") else bits_text
    if not digits or not digits.isascii() or not digits.isdigit():
        raise bad_bits
    bits = int(bits_text)
    if bits > 2**63 - 1:  # strconv.Atoi's range error
        raise bad_bits
    if bits < 0 or bits > address.bits:
        raise _prefix_error(text, "prefix length out of range")
    return Prefix(address, bits)


# --- net/url -----------------------------------------------------------------------------------

_PATH, _PATH_SEGMENT, _HOST, _ZONE, _USER_PASSWORD, _QUERY_COMPONENT, _FRAGMENT = range(1, 8)
_UPPER_HEX = "0123456789ABCDEF"
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
    return chr(byte) in _HEX


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
            if mode == _HOST and _HEX[chr(text[index + 1])] < 8 and escape != b"%25":
                raise GoParseError("invalid URL escape " + go_quote(_text(escape)))
            if mode == _ZONE:
                value = _HEX[chr(text[index + 1])] << 4 | _HEX[chr(text[index + 2])]
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
            out.append(_HEX[chr(text[index + 1])] << 4 | _HEX[chr(text[index + 2])])
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
            out += b"%" + _UPPER_HEX[byte >> 4].encode() + _UPPER_HEX[byte & 15].encode()
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
    colon = host.rfind(b":")
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
