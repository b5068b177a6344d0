"""A webhook's address is judged by where it leads: IPv6 forms that carry an IPv4 address
(IPv4-mapped, IPv4-compatible, IPv4-translated, NAT64, 6to4, Teredo) by that IPv4 address, and
every IANA special-purpose range is internal. Measured before: NAT64 ``64:ff9b::7f00:1`` (the
portal itself) and ``64:ff9b::a9fe:a9fe`` (the metadata service), ``::a.b.c.d``, 6to4 and
``192.0.0.0/24`` were delivered to."""

from __future__ import annotations

import pytest

from notifications.tenant_webhooks import set_webhook_url
from notifications.webhooks import InternalDestination, check_destination

# (address, why it is internal)
REFUSED = [
    ("64:ff9b::7f00:1", "NAT64 of 127.0.0.1, the portal itself"),
    ("64:ff9b::a9fe:a9fe", "NAT64 of 169.254.169.254, the metadata service"),
    ("64:ff9b::a00:5", "NAT64 of 10.0.0.5"),
    ("64:ff9b:1::a00:5", "the local-use NAT64 prefix"),
    ("::7f00:1", "IPv4-compatible 127.0.0.1"),
    ("::a9fe:a9fe", "IPv4-compatible 169.254.169.254"),
    ("::ffff:127.0.0.1", "IPv4-mapped 127.0.0.1"),
    ("::ffff:a9fe:a9fe", "IPv4-mapped 169.254.169.254"),
    ("::ffff:0:a00:5", "IPv4-translated 10.0.0.5"),
    ("2002:7f00:1::1", "6to4 of 127.0.0.1"),
    ("2002:a9fe:a9fe::", "6to4 of 169.254.169.254"),
    ("2002:c0a8:101::1", "6to4 of 192.168.1.1"),
    ("2001:0:4136:e378:8000:63bf:f5ff:fffe", "Teredo whose client is 10.0.0.1"),
    ("2001:0:a00:1::f7f7:f7f7", "Teredo whose server is 10.0.0.1"),
    ("192.0.0.8", "IETF protocol assignments (192.0.0.0/24)"),
    ("192.0.0.170", "NAT64 discovery (192.0.0.0/24)"),
    ("100.64.0.1", "shared address space"),
    ("198.18.0.1", "benchmarking"),
    ("192.88.99.1", "6to4 relay anycast"),
    ("192.31.196.1", "AS112"),
    ("0.0.0.0", "this network"),  # noqa: S104  (an address to refuse, not to bind)
    ("240.0.0.1", "reserved"),
    ("224.0.0.1", "multicast"),
    ("::", "unspecified"),
    ("::1", "loopback"),
    ("fd00::1", "unique local"),
    ("fe80::1", "link-local"),
    ("2001:db8::1", "documentation"),
    ("3fff::1", "documentation"),
    ("5f00::1", "segment routing"),
    ("100::1", "discard-only"),
    ("ff02::1", "multicast"),
]
ALLOWED = [
    ("8.8.8.8", "public IPv4"),
    ("2606:4700::1111", "public IPv6"),
    ("::ffff:8.8.8.8", "IPv4-mapped public address"),
    ("64:ff9b::808:808", "NAT64 of a public address (an IPv6-only cluster's DNS64)"),
    ("2002:808:808::1", "6to4 of a public address"),
    ("2001:0:4136:e378::f7f7:f7f7", "Teredo with a public server and client"),
]


@pytest.fixture(autouse=True)
def _private_addresses_refused(settings):
    settings.WEBHOOK_ALLOW_PRIVATE_ADDRESSES = False


@pytest.mark.parametrize(("address", "why"), REFUSED, ids=[row[0] for row in REFUSED])
def test_it_refuses_an_address_that_leads_inside(address, why):
    with pytest.raises(InternalDestination, match="an internal address"):
        check_destination(address)


@pytest.mark.parametrize(("address", "why"), ALLOWED, ids=[row[0] for row in ALLOWED])
def test_it_allows_an_address_that_leads_to_a_public_receiver(address, why):
    check_destination(address)


def test_the_refusal_names_the_ipv4_address_the_form_carries():
    with pytest.raises(InternalDestination) as refused:
        check_destination("64:ff9b::a9fe:a9fe")
    assert "(NAT64 of 169.254.169.254)" in str(refused.value)


@pytest.mark.django_db
def test_saving_a_nat64_url_of_the_metadata_service_is_refused(alice, team_a):
    from django.core.exceptions import ValidationError

    with pytest.raises(ValidationError) as refused:
        set_webhook_url(actor=alice, tenant=team_a, url="http://[64:ff9b::a9fe:a9fe]/latest/")
    assert "an internal address" in str(refused.value.message_dict["webhook_url"])
