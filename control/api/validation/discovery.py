"""Validation of discovery.k8s.io/v1 EndpointSlices.

Upstream: pkg/apis/discovery/validation/validation.go (`ValidateEndpointSlice`: addressType required and one
of IPv4, IPv6, FQDN; at most 1,000 endpoints, each with 1 to 100 addresses valid for the address type —
IPs also go through core's `ValidateEndpointIP`: not unspecified, link-local or link-local multicast —,
a valid nodeName and hostname; at most 20,000 ports with unique DNS-1123 names, a protocol of TCP/UDP/SCTP
and a qualified-name appProtocol; `ValidateEndpointSliceUpdate`: addressType is immutable).
Not checked: deprecatedTopology and hints (no component here writes or reads them). Departure: loopback
addresses are accepted (upstream refuses them), as this server's Endpoints validation does: an API server
bound to 127.0.0.1 advertises that address in the `kubernetes` Service's Endpoints and EndpointSlice.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from typing import Any

from control.api.validation.primitives import Check, Validator, join
from control.apimachinery.validation import (
    FieldError,
    is_dns1123_label,
    is_dns1123_subdomain,
    is_qualified_name,
)

ADDRESS_TYPES = ("FQDN", "IPv4", "IPv6")  # sorted, as upstream's sets.List() prints them
PROTOCOLS = ("SCTP", "TCP", "UDP")
MAX_ENDPOINTS = 1000
MAX_ADDRESSES = 100
MAX_PORTS = 20000


def _endpoint_ip_errors(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> list[str]:
    """Upstream core ValidateEndpointIP: addresses an endpoint can never usefully have (loopback aside,
    module notes)."""
    if ip.is_unspecified:
        return [f"may not be unspecified ({ip})"]
    if ip.is_link_local:
        return ["may not be in the link-local range (169.254.0.0/16, fe80::/10)"]
    if ip in ipaddress.ip_network("224.0.0.0/24") or ip in ipaddress.ip_network("ff02::/16"):
        return ["may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)"]
    return []


def address_errors(address_type: str, address: str) -> list[str]:
    """The messages for one address of a slice of `address_type` (unknown types are not checked)."""
    if address_type in ("IPv4", "IPv6"):
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            ip = None
        if ip is None or ip.version != (4 if address_type == "IPv4" else 6):
            return [f"must be a valid {address_type} address"]
        return _endpoint_ip_errors(ip)
    if address_type == "FQDN":
        errors = is_dns1123_subdomain(address)
        if not errors and "." not in address:
            errors = ["should be a domain with at least two segments separated by dots"]
        return errors
    return []


def _endpoints(c: Check, obj: Mapping[str, Any], address_type: str) -> None:
    endpoints = c.items(obj, "endpoints", "endpoints")
    if len(endpoints) > MAX_ENDPOINTS:
        c.add([FieldError.too_many("endpoints", len(endpoints), MAX_ENDPOINTS)])
        return
    for path, endpoint in endpoints:
        addresses_path = join(path, "addresses")
        addresses = c.texts(endpoint, "addresses", addresses_path)
        if not addresses:
            c.add([FieldError.required(addresses_path, "must contain at least 1 address")])
        elif len(addresses) > MAX_ADDRESSES:
            c.add([FieldError.too_many(addresses_path, len(addresses), MAX_ADDRESSES)])
        for index, address in enumerate(addresses):
            c.invalid(f"{addresses_path}[{index}]", address, address_errors(address_type, address))
        if (conditions := c.obj(endpoint, "conditions", join(path, "conditions"))) is not None:
            for key in ("ready", "serving", "terminating"):
                if key in conditions and conditions[key] is not None and not isinstance(conditions[key], bool):
                    c.add([FieldError.invalid(join(path, f"conditions.{key}"), conditions[key],
                                              "must be of type boolean")])
        if node_name := c.text(endpoint, "nodeName", join(path, "nodeName")):
            c.invalid(join(path, "nodeName"), node_name, is_dns1123_subdomain(node_name))
        if hostname := c.text(endpoint, "hostname", join(path, "hostname")):
            c.invalid(join(path, "hostname"), hostname, is_dns1123_label(hostname))
        c.text(endpoint, "zone", join(path, "zone"))
        if (target := c.obj(endpoint, "targetRef", join(path, "targetRef"))) is not None:
            for key in ("kind", "namespace", "name", "uid", "apiVersion", "resourceVersion", "fieldPath"):
                c.text(target, key, join(path, f"targetRef.{key}"))


def _ports(c: Check, obj: Mapping[str, Any]) -> None:
    ports = c.items(obj, "ports", "ports")
    if len(ports) > MAX_PORTS:
        c.add([FieldError.too_many("ports", len(ports), MAX_PORTS)])
        return
    names: set[str] = set()
    for path, port in ports:
        name = c.text(port, "name", join(path, "name"))
        if name:
            c.invalid(join(path, "name"), name, is_dns1123_label(name))
        if name is not None:
            if name in names:
                c.add([FieldError.duplicate(join(path, "name"), name)])
            names.add(name)
        c.supported(port, "protocol", join(path, "protocol"), PROTOCOLS, required=True)
        number = c.integer(port, "port", join(path, "port"))
        if number is not None and not 0 <= number <= 65535:
            c.add([FieldError.invalid(join(path, "port"), number, "must be between 0 and 65535, inclusive")])
        if app_protocol := c.text(port, "appProtocol", join(path, "appProtocol")):
            c.invalid(join(path, "appProtocol"), app_protocol, is_qualified_name(app_protocol))


def _endpoint_slice(c: Check, obj: Mapping[str, Any], old: Mapping[str, Any] | None) -> None:
    address_type = c.supported(obj, "addressType", "addressType", ADDRESS_TYPES, required=True)
    _endpoints(c, obj, address_type or "")
    _ports(c, obj)
    if old is not None:
        c.immutable(obj.get("addressType"), old.get("addressType"), "addressType")


VALIDATORS: dict[str, Validator] = {
    "endpointslices": _endpoint_slice,
}
