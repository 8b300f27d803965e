"""The records one Service contributes to the cluster zone, from the Service and its EndpointSlices (pure).

Upstream: the Kubernetes DNS-Based Service Discovery specification (kubernetes/dns docs/specification.md)
as CoreDNS's kubernetes plugin serves it (plugin/kubernetes: kubernetes.go `Records`, `endpointHostname`,
reverse.go). With `<svc>` = `<service>.<ns>.svc.<zone>.`:

- a Service with ClusterIPs: `<svc>` A/AAAA per ClusterIP; per named port `_<port>._<proto>.<svc>` SRV
  `0 100 <port> <svc>`; per ClusterIP a PTR from its reverse name to `<svc>`;
- a headless Service (clusterIP None): per *ready* endpoint address (conditions.ready not false, or the
  Service publishes not-ready addresses, or carries the old tolerate-unready annotation) `<svc>` A/AAAA
  and `<hostname>.<svc>` A/AAAA, where the hostname is the endpoint's `hostname` (a StatefulSet pod's, or
  a pod's with `hostname` + `subdomain` = the Service) or else the address with dashes (CoreDNS's
  system-assigned name: `10-244-1-5`); per named port of the slice `_<port>._<proto>.<svc>` SRV to
  `<hostname>.<svc>` with the endpoint port; a PTR from each address to `<hostname>.<svc>`. No ready
  endpoint → no record at all, so `<svc>` is NXDOMAIN as the specification asks;
- an ExternalName Service: `<svc>` CNAME `<externalName>.`, nothing else.

SRV weights are spread evenly over a name's records (100 / n, at least 1), priority 0, as CoreDNS does.
Names are lower case (comparisons are case-insensitive by the specification); FQDN slices are skipped.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import dns.reversename

from control.api.typed.core import Service
from control.api.typed.discovery import EndpointSlice

TOLERATE_UNREADY = "service.alpha.kubernetes.io/tolerate-unready-endpoints"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"


@dataclass(frozen=True, order=True)
class Record:
    name: str   # fully qualified, lower case, ending in "."
    rtype: str  # A, AAAA, SRV, PTR, CNAME
    data: str   # the rdata as zone-file text


def service_fqdn(namespace: str, name: str, domain: str) -> str:
    return f"{name}.{namespace}.svc.{domain}.".lower()


def reverse_name(address: str) -> str:
    return dns.reversename.from_address(address).to_text().lower()


def _address_record(name: str, address: str) -> Record:
    return Record(name, "AAAA" if ":" in address else "A", address)


def _ip(value: Any) -> str | None:
    try:
        return str(ipaddress.ip_address(str(value)))
    except ValueError:
        return None


def endpoint_hostname(endpoint: Mapping[str, Any], address: str) -> str:
    """The endpoint's hostname, or its address with dashes (CoreDNS endpointHostname)."""
    hostname = str(endpoint.get("hostname") or "")
    return hostname.lower() if hostname else address.replace(".", "-").replace(":", "-")


def _srv(records: list[Record]) -> list[Record]:
    """Fill in the weights of SRV records (data holds `<port> <target>` until here)."""
    counts: dict[str, int] = {}
    for record in records:
        counts[record.name] = counts.get(record.name, 0) + 1
    return [Record(r.name, "SRV", f"0 {max(1, 100 // counts[r.name])} {r.data}") for r in records]


def service_records(service: Mapping[str, Any], slices: Iterable[Mapping[str, Any]], domain: str) -> list[Record]:
    """Every record `service` contributes (module notes), sorted and without duplicates."""
    view = Service(service)
    meta, spec = view.metadata, view.spec
    svc = service_fqdn(meta.namespace or "default", meta.name, domain)
    if spec.type == "ExternalName":
        target = str(spec.external_name).lower().rstrip(".")
        return [Record(svc, "CNAME", f"{target}.")] if target else []
    cluster_ips = [ip for ip in (spec.cluster_ips or [spec.cluster_ip]) if ip and ip != "None"]
    records: list[Record] = []
    srv: list[Record] = []
    if cluster_ips:
        for address in filter(None, map(_ip, cluster_ips)):
            records.append(_address_record(svc, address))
            records.append(Record(reverse_name(address), "PTR", svc))
        for port in spec.ports:
            if port.name and port.port:
                proto = (port.protocol or "TCP").lower()
                srv.append(Record(f"_{port.name}._{proto}.{svc}".lower(), "SRV", f"{port.port} {svc}"))
        return sorted(set(records + _srv(srv)))
    publish_all = spec.publish_not_ready_addresses or \
        str(meta.annotations.get(TOLERATE_UNREADY, "")).lower() == "true"
    for endpoint_slice in map(EndpointSlice, slices):
        if (endpoint_slice.address_type or "IPv4") not in ("IPv4", "IPv6"):
            continue
        ports = [(str(p.name).lower(), (p.protocol or "TCP").lower(), int(p.port))
                 for p in endpoint_slice.ports if p.name and p.port]
        for endpoint in endpoint_slice.endpoints:
            if not publish_all and not endpoint.conditions.is_ready:
                continue
            for address in filter(None, map(_ip, endpoint.addresses)):
                host = f"{endpoint_hostname(endpoint.raw, address)}.{svc}"
                records += [_address_record(svc, address), _address_record(host, address),
                            Record(reverse_name(address), "PTR", host)]
                srv += [Record(f"_{name}._{proto}.{svc}", "SRV", f"{port} {host}") for name, proto, port in ports]
    return sorted(set(records) | set(_srv(sorted(set(srv)))))
