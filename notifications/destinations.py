"""Which network addresses a webhook may be delivered to.

A tenant admin chooses the webhook's URL, so the portal's workers must not be pointed at the
portal's own network: loopback, private, link-local (the cloud metadata service), shared and
every other IANA special-purpose range are internal. IPv6 has several ways of writing an IPv4
address (IPv4-mapped ``::ffff:a.b.c.d``, IPv4-compatible ``::a.b.c.d``, IPv4-translated
``::ffff:0:a.b.c.d``, NAT64 ``64:ff9b::a.b.c.d``, 6to4 ``2002:AABB:CCDD::``, Teredo's server
and obfuscated client); each reaches the IPv4 address it carries, so such an address is judged
by that IPv4 address, by the same rules. The local-use NAT64 prefix ``64:ff9b:1::/48`` embeds
its address in a site-chosen format and is refused whole.

Python's own ``is_global`` misses several of these (3.11 calls ``192.0.0.8``, ``::7f00:1`` and
``64:ff9b::7f00:1`` global), hence the explicit tables: the IANA IPv4 and IPv6 Special-Purpose
Address Registries (globally reachable entries included: a webhook has no business with AS112
or anycast relays) and the multicast ranges.
"""

from __future__ import annotations

from ipaddress import IPv4Address, IPv4Network, IPv6Address, IPv6Network

__all__ = ["embedded_ipv4", "is_internal"]

SPECIAL_IPV4 = tuple(
    IPv4Network(network)
    for network in (
        "0.0.0.0/8",  # "this network"
        "10.0.0.0/8",  # private
        "100.64.0.0/10",  # shared address space (carrier-grade NAT)
        "127.0.0.0/8",  # loopback
        "169.254.0.0/16",  # link-local (cloud metadata)
        "172.16.0.0/12",  # private
        "192.0.0.0/24",  # IETF protocol assignments (DS-Lite, NAT64 discovery, PCP, TURN)
        "192.0.2.0/24",  # documentation (TEST-NET-1)
        "192.31.196.0/24",  # AS112-v4
        "192.52.193.0/24",  # AMT
        "192.88.99.0/24",  # 6to4 relay anycast (deprecated)
        "192.168.0.0/16",  # private
        "192.175.48.0/24",  # direct delegation AS112
        "198.18.0.0/15",  # benchmarking
        "198.51.100.0/24",  # documentation (TEST-NET-2)
        "203.0.113.0/24",  # documentation (TEST-NET-3)
        "224.0.0.0/4",  # multicast
        "240.0.0.0/4",  # reserved
        "255.255.255.255/32",  # limited broadcast
    )
)
# Without the forms that embed an IPv4 address: those are judged by the address they carry.
SPECIAL_IPV6 = tuple(
    IPv6Network(network)
    for network in (
        "::/128",  # unspecified
        "::1/128",  # loopback
        "64:ff9b:1::/48",  # local-use IPv4/IPv6 translation
        "100::/64",  # discard-only
        "100:0:0:1::/64",  # dummy prefix
        "2001::/23",  # IETF protocol assignments (ORCHID, AMT, benchmarking, ...)
        "2001:db8::/32",  # documentation
        "2620:4f:8000::/48",  # direct delegation AS112
        "3fff::/20",  # documentation
        "5f00::/16",  # segment routing (SRv6) SIDs
        "fc00::/7",  # unique local
        "fe80::/10",  # link-local
        "fec0::/10",  # site-local (deprecated)
        "ff00::/8",  # multicast
    )
)
IPV4_COMPATIBLE = IPv6Network("::/96")
IPV4_TRANSLATED = IPv6Network("::ffff:0:0:0/96")
NAT64 = IPv6Network("64:ff9b::/96")
LOW_32_BITS = 0xFFFFFFFF


def embedded_ipv4(address: IPv6Address) -> list[tuple[str, IPv4Address]]:
    """The IPv4 addresses an IPv6 address reaches, each with the name of its form; empty for
    an address that carries none."""
    if address.ipv4_mapped is not None:
        return [("IPv4-mapped", address.ipv4_mapped)]
    if address.sixtofour is not None:
        return [("6to4", address.sixtofour)]
    if address.teredo is not None:
        server, client = address.teredo
        return [("Teredo server", server), ("Teredo client", client)]
    low = IPv4Address(int(address) & LOW_32_BITS)
    if address in NAT64:
        return [("NAT64", low)]
    if address in IPV4_TRANSLATED:
        return [("IPv4-translated", low)]
    if address in IPV4_COMPATIBLE and int(address) > 1:  # :: and ::1 are themselves
        return [("IPv4-compatible", low)]
    return []


def is_internal(address: IPv4Address | IPv6Address) -> bool:
    """Whether a webhook must not be delivered to ``address`` (see the module)."""
    if isinstance(address, IPv6Address):
        embedded = embedded_ipv4(address)
        if embedded:
            return any(is_internal(ipv4) for _, ipv4 in embedded)
        special: tuple[IPv4Network | IPv6Network, ...] = SPECIAL_IPV6
    else:
        special = SPECIAL_IPV4
    return (
        not address.is_global
        or address.is_multicast
        or any(address in network for network in special)
    )
