"""What the proxy knows about services and endpoints, as plain frozen values.

Follows upstream's pkg/proxy: `ServicePortName` (types.go) names one port of one service and is the key of
everything else; `ServicePortInfo` is the part of a Service that matters to the rules for that port
(serviceport.go BaseServicePortInfo); `EndpointInfo` one backend address of it (endpoint.go
BaseEndpointInfo). The change trackers turn Service and EndpointSlice objects (wire-format dicts) into
these with the pure functions below, and the renderer reads only these values, so rendering needs no API
objects and can be tested on tables.

EndpointSlices are matched to service ports by port *name* and protocol, as upstream's endpointSliceCache
does: the EndpointSlice controller has already resolved each service port's targetPort (by name or number)
into the slice's ports, and gave them the service port's name. A slice belongs to the Service its
`kubernetes.io/service-name` label names; a slice without it is ignored, and so are slices of another
address family than IPv4 (this proxy is IPv4 only). From an endpoint only its first address is used;
unset conditions read as upstream's: ready and serving when nil, terminating only when true.

`categorize_endpoints` is upstream's pkg/proxy/topology.go CategorizeEndpoints without topology: the
endpoints a service port uses for Cluster and for Local traffic policy — the ready ones, or, when none is
ready, the ones still serving while terminating (so a rolling update or a scale-down never leaves a
service with no backend while its old pods still answer).
"""

from __future__ import annotations

import ipaddress
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from control.api.typed.core import Service
from control.api.typed.discovery import EndpointSlice
from control.apimachinery.netutils import parse_ip_sloppy

DEFAULT_AFFINITY_TIMEOUT = 10800  # seconds; the API server's default for ClientIP affinity


@dataclass(frozen=True, order=True)
class ServicePortName:
    """`ns/name:port` — the port name may be empty for a single unnamed port (upstream types.go String())."""

    namespace: str
    name: str
    port: str
    protocol: str  # "TCP" | "UDP" | "SCTP", as in the API

    def __str__(self) -> str:
        base = f"{self.namespace}/{self.name}"
        return f"{base}:{self.port}" if self.port else base


@dataclass(frozen=True)
class ServicePortInfo:
    """One port of a Service as the rules need it."""

    name: ServicePortName
    cluster_ip: str                      # "" or "None" means no ClusterIP rules
    port: int
    protocol: str
    node_port: int = 0
    session_affinity_seconds: int = 0    # 0: no ClientIP affinity
    external_ips: tuple[str, ...] = ()
    load_balancer_ips: tuple[str, ...] = ()
    external_policy_local: bool = False  # externalTrafficPolicy: Local
    internal_policy_local: bool = False  # internalTrafficPolicy: Local


@dataclass(frozen=True, order=True)
class EndpointInfo:
    """One backend of one service port."""

    ip: str
    port: int
    ready: bool = True
    node_name: str = ""
    is_local: bool = False  # on this proxy's node
    serving: bool = True  # EndpointConditions.serving (nil: true)
    terminating: bool = False  # EndpointConditions.terminating (nil: false)

    @property
    def address(self) -> str:
        return f"{self.ip}:{self.port}"


@dataclass(frozen=True)
class NodeConfig:
    """This node's facts and the proxy options the rules depend on (KubeProxyConfiguration names in comments)."""

    node_name: str
    node_ips: tuple[str, ...] = ()            # the node's addresses, for NodePorts and "is local" checks
    cluster_cidr: str = ""                    # clusterCIDR: masquerade service traffic from outside it
    masquerade_all: bool = False              # iptables.masqueradeAll
    masquerade_bit: int = 14                  # iptables.masqueradeBit → mark 0x4000
    nodeport_addresses: tuple[str, ...] = ()  # nodePortAddresses (CIDRs); empty: every local address
    localhost_nodeports: bool = True          # iptables.localhostNodePorts

    @property
    def nodeports_on_localhost(self) -> bool:
        """Whether NodePorts answer on 127.0.0.1: localhostNodePorts on and nodePortAddresses allowing loopback
        (empty, or a CIDR holding 127.0.0.1) — upstream NewProxier's condition for route_localnet=1 and the
        KUBE-FIREWALL guard."""
        if not self.localhost_nodeports:
            return False
        loopback = ipaddress.ip_address("127.0.0.1")
        return not self.nodeport_addresses or any(
            loopback in ipaddress.ip_network(cidr, strict=False) for cidr in self.nodeport_addresses)


@dataclass(frozen=True)
class ProxyState:
    """Everything a sync renders from: every service port and its backends (ready and not)."""

    services: Mapping[ServicePortName, ServicePortInfo]
    endpoints: Mapping[ServicePortName, Sequence[EndpointInfo]]


def _ipv4(value: object) -> str | None:
    """An IPv4 address in canonical form, or None (upstream newBaseServiceInfo and the endpoint slice cache
    read addresses with ParseIPSloppy and drop what does not parse or is of the other family). Canonical
    matters: an object written before 1.20 may hold `1.2.3.004`, which Go reads as 1.2.3.4 but iptables as
    octal (`010` is 8, `099` an error that fails the whole restore), and the SEP chain hash covers the text."""
    if not isinstance(value, str) or not value:
        return None
    parsed = parse_ip_sloppy(value)
    return str(parsed) if parsed is not None and parsed.version == 4 else None


def _ipv4s(values: Iterable[object]) -> tuple[str, ...]:
    return tuple(ip for ip in map(_ipv4, values) if ip is not None)


def service_ports(service: Mapping[str, Any]) -> list[ServicePortInfo]:
    """The rule-relevant ports of a Service; none for headless or ExternalName services.

    Upstream skips services whose ClusterIP is "" or "None" (headless) and type ExternalName
    (serviceport.go newBaseServiceInfo callers in servicechangetracker.go).
    """
    view = Service(service)
    meta, spec = view.metadata, view.spec
    if spec.type == "ExternalName" or spec.cluster_ip in ("", "None"):
        return []
    if (cluster_ip := _ipv4(spec.cluster_ip)) is None:
        return []
    affinity = 0
    if spec.session_affinity == "ClientIP":
        config = (spec.session_affinity_config or {}).get("clientIP") or {}
        affinity = int(config.get("timeoutSeconds") or DEFAULT_AFFINITY_TIMEOUT)
    lb_ips = _ipv4s(entry.ip for entry in view.status.load_balancer.ingress if isinstance(entry.raw, Mapping))
    external_ips = _ipv4s(spec.external_ips)
    result = []
    for port in spec.ports:
        protocol = port.protocol or "TCP"
        name = ServicePortName(meta.namespace, meta.name, port.name, protocol)
        result.append(ServicePortInfo(
            name=name, cluster_ip=cluster_ip, port=port.port, protocol=protocol,
            node_port=port.node_port, session_affinity_seconds=affinity,
            external_ips=external_ips, load_balancer_ips=lb_ips,
            external_policy_local=spec.external_traffic_policy == "Local",
            internal_policy_local=spec.internal_traffic_policy == "Local"))
    return result


SERVICE_NAME_LABEL = "kubernetes.io/service-name"  # discovery.LabelServiceName


def slice_service(endpoint_slice: Mapping[str, Any]) -> tuple[str, str] | None:
    """(namespace, service name) of a slice, None without the service-name label (upstream skips those)."""
    meta = EndpointSlice(endpoint_slice).metadata
    name = meta.labels.get(SERVICE_NAME_LABEL)
    return (meta.namespace, name) if name else None


def endpoint_slice_by_port(endpoint_slice: Mapping[str, Any], *,
                           node_name: str = "") -> dict[ServicePortName, list[EndpointInfo]]:
    """Backends of one EndpointSlice per service port name, sorted, with their conditions (module notes).

    Ports are keyed by (name, protocol); a port without a number is skipped, as upstream does.
    """
    service = slice_service(endpoint_slice)
    view = EndpointSlice(endpoint_slice)
    if service is None or (view.address_type or "IPv4") != "IPv4":
        return {}
    result: dict[ServicePortName, list[EndpointInfo]] = {}
    for port in view.ports:
        if port.port is None:
            continue
        key = ServicePortName(service[0], service[1], port.name or "", port.protocol or "TCP")
        backends = result.setdefault(key, [])
        for endpoint in view.endpoints:
            addresses = endpoint.addresses
            address = _ipv4(addresses[0]) if addresses else None
            if address is None:
                continue
            conditions = endpoint.conditions
            host = endpoint.node_name or ""
            backends.append(EndpointInfo(
                ip=address, port=int(port.port), ready=conditions.is_ready,
                node_name=host, is_local=bool(node_name) and host == node_name,
                serving=conditions.is_serving, terminating=conditions.is_terminating))
    for backends in result.values():
        backends.sort()
    return result


def merge_slices(slices: Sequence[Mapping[ServicePortName, Sequence[EndpointInfo]]]
                 ) -> dict[ServicePortName, tuple[EndpointInfo, ...]]:
    """One Service's slices (already converted, in slice-name order) merged per port, an endpoint
    (ip:port) listed once — the first slice's copy wins, as upstream's endpointSliceCache keeps the first."""
    merged: dict[ServicePortName, dict[str, EndpointInfo]] = {}
    for converted in slices:
        for name, backends in converted.items():
            seen = merged.setdefault(name, {})
            for endpoint in backends:
                seen.setdefault(endpoint.address, endpoint)
    return {name: tuple(sorted(backends.values())) for name, backends in merged.items()}


@dataclass(frozen=True)
class Categorized:
    """What one service port uses (upstream CategorizeEndpoints' results)."""

    cluster: tuple[EndpointInfo, ...]  # for Cluster traffic policy
    local: tuple[EndpointInfo, ...]    # for Local traffic policy: this node's
    has_any: bool                      # some usable endpoint exists anywhere


def categorize_endpoints(endpoints: Sequence[EndpointInfo]) -> Categorized:
    """Ready endpoints; when none is ready, the serving-and-terminating ones (module notes). The same rule
    for this node's endpoints alone gives the Local set."""
    def usable(candidates: Sequence[EndpointInfo]) -> tuple[EndpointInfo, ...]:
        ready = tuple(e for e in candidates if e.ready)
        return ready or tuple(e for e in candidates if e.serving and e.terminating)

    cluster = usable(endpoints)
    return Categorized(cluster=cluster, local=usable([e for e in endpoints if e.is_local]), has_any=bool(cluster))
