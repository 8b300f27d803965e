"""IP address parsing as upstream's k8s.io/utils/net (ParseIPSloppy) and k8s.io/apimachinery/pkg/util/validation
ip.go (IsValidIP, IsValidIPForLegacyField) read it.

Go's net.ParseIP before 1.17 accepted IPv4 octets with leading zeros and read them as decimal
(`1.2.3.010` is 1.2.3.10); Kubernetes objects written then may still hold such addresses, so upstream keeps
"sloppy" parsing for reading old fields and refuses leading zeros only in newly written values. Tools
that read octets as octal (iptables, glibc's inet_aton: `010` is 8, `099` an error) must be handed the
canonical form, which `canonical_ip` gives.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Collection

IP_MESSAGE = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"
LEADING_ZEROS_MESSAGE = "must not have leading 0s"
IPV4_MAPPED_MESSAGE = "must not be an IPv4-mapped IPv6 address"


def parse_ip_sloppy(value: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    """Upstream ParseIPSloppy: an IPv4 address whose octets may carry leading zeros (read as decimal), or
    any address Python parses; None for anything else."""
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        pass
    parts = value.split(".")
    if len(parts) != 4 or not all(part.isascii() and part.isdigit() and len(part) <= 3 for part in parts):
        return None
    octets = [int(part, 10) for part in parts]
    if any(octet > 255 for octet in octets):
        return None
    return ipaddress.IPv4Address(".".join(map(str, octets)))


def canonical_ip(value: str) -> str:
    """The address in its canonical text (`1.2.3.004` → `1.2.3.4`); a value that is no address at all is
    returned unchanged, for the caller's own check to refuse."""
    parsed = parse_ip_sloppy(value)
    return value if parsed is None else str(parsed)


def ip_errors(value: str) -> list[str]:
    """Upstream IsValidIP for a newly written value: no leading zeros, no IPv4-mapped IPv6."""
    try:
        parsed = ipaddress.ip_address(value)
    except ValueError:
        return [LEADING_ZEROS_MESSAGE if parse_ip_sloppy(value) is not None else IP_MESSAGE]
    if isinstance(parsed, ipaddress.IPv6Address) and parsed.ipv4_mapped is not None:
        return [IPV4_MAPPED_MESSAGE]
    return []


def legacy_ip_errors(value: str, valid_old: Collection[str] = ()) -> list[str]:
    """Upstream IsValidIPForLegacyField with strict validation: a value the old object already held is
    kept whatever its form (an object written before the rule can still be updated); any other value
    must be valid as `ip_errors` says."""
    if value in valid_old:
        return []
    return ip_errors(value)


def non_special_ip_errors(value: str) -> list[str]:
    """Upstream ValidateNonSpecialIP (Service externalIPs, Endpoints addresses): addresses a node cannot be
    asked to accept traffic for."""
    parsed = parse_ip_sloppy(value)
    if parsed is None:
        return []
    if parsed.is_unspecified:
        return [f"may not be unspecified ({value})"]
    if parsed.is_loopback:
        return ["may not be in the loopback range (127.0.0.0/8, ::1/128)"]
    if parsed.is_link_local:
        return ["may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
    if parsed in ipaddress.ip_network("224.0.0.0/24") or parsed in ipaddress.ip_network("ff02::/16"):
        return ["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
    return []
