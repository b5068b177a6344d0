"""Go's ``net/netip`` parsers as Kubernetes' CEL IP and CIDR libraries use them: ``ParseAddr``
and ``ParsePrefix`` with their error texts, so ``ip()``/``cidr()`` accept, reject and report
exactly as upstream (the URL parser is in :mod:`dra.cel.gourl`).

Followed: the newest netip, whose rules Kubernetes 1.34–1.36 builds get with their Go patch
releases (an IPv6 group of more than four hex digits is an error; leading zeros in IPv4
fields and in a prefix length are errors).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = [
    "HEX_DIGITS",
    "Address",
    "GoParseError",
    "Prefix",
    "go_quote",
    "parse_address",
    "parse_prefix",
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


HEX_DIGITS = {character: int(character, 16) for character in "0123456789abcdefABCDEF"}


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
        while offset < len(rest) and rest[offset] in HEX_DIGITS:
            accumulated = (accumulated << 4) + HEX_DIGITS[rest[offset]]
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
