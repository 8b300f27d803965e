"""The `kubernetes` Service's Endpoints: this API server's address and port, kept by the API server.

Upstream: pkg/controlplane/controller/kubernetesservice (the API server's own bootstrap controller, not
the endpoints controller: the `kubernetes` Service has no selector) with reconcilers/mastercount.go
(`ReconcileEndpoints`: with one server the Endpoints is exactly one subset, one address, the ports
`https`/TCP/secure port; rewritten when it differs, checked every `EndpointInterval` = 10 s, so a deleted
or edited object comes back) and reconcilers/endpointsadapter.go (the `endpointslice.kubernetes.io/
skip-mirror` label). The advertised address follows kube-apiserver's `--advertise-address` default
(options.ServerRunOptions.DefaultAdvertiseAddress): the bind address when it is a specific IP, else the
host's address on the default route (utilnet.ChooseHostInterface reads /proc/net/route the same way).

Beside the Endpoints, the API server keeps the `kubernetes` Service's EndpointSlice (upstream
endpointsadapter.go `EnsureEndpointSliceFromEndpoints`: same name and namespace, label
`kubernetes.io/service-name: kubernetes`, addressType IPv4, the address ready): the kube-proxy reads slices,
and no controller writes this one (the Service has no selector, and the Endpoints carries skip-mirror).

`master_endpoints` and `master_endpoint_slice` are pure; `primary_ipv4` reads the host; `reconcile` writes
through the registry.
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Callable
from typing import Any

from control.api.typed import TypedObject
from control.apiserver.registry.store import Registry
from control.apiserver.resources import by_path

ENDPOINTS = by_path("", "v1", "endpoints")
ENDPOINT_SLICES = by_path("discovery.k8s.io", "v1", "endpointslices")
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
NAMESPACE, NAME, PORT_NAME = "default", "kubernetes", "https"
SKIP_MIRROR_LABEL = "endpointslice.kubernetes.io/skip-mirror"
RECONCILE_SECONDS = 10.0  # upstream EndpointInterval


def master_endpoints(ip: str, port: int) -> dict[str, Any]:
    """The Endpoints object for one API server at ip:port."""
    return {"apiVersion": "v1", "kind": "Endpoints",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SKIP_MIRROR_LABEL: "true"}},
            "subsets": [{"addresses": [{"ip": ip}], "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}]}]}


def master_endpoint_slice(ip: str, port: int) -> dict[str, Any]:
    """The EndpointSlice for one API server at ip:port (what upstream's endpoints adapter writes)."""
    return {"apiVersion": "discovery.k8s.io/v1", "kind": "EndpointSlice",
            "metadata": {"name": NAME, "namespace": NAMESPACE, "labels": {SERVICE_NAME_LABEL: NAME}},
            "addressType": "IPv4", "endpoints": [{"addresses": [ip], "conditions": {"ready": True}}],
            "ports": [{"name": PORT_NAME, "port": port, "protocol": "TCP"}]}


def _default_route_interface(route_table: str) -> str | None:
    """The interface of the lowest-metric IPv4 default route in /proc/net/route text."""
    best: tuple[int, str] | None = None
    for line in route_table.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 8 and fields[1] == "00000000" and fields[7] == "00000000":
            metric = int(fields[6])
            if best is None or metric < best[0]:
                best = (metric, fields[0])
    return best[1] if best else None


def choose_address(interfaces: dict[str, list[str]], route_table: str) -> str | None:
    """The default route interface's first global IPv4 address, else any non-loopback IPv4 address."""
    def usable(address: str) -> bool:
        ip = ipaddress.ip_address(address)
        return not (ip.is_loopback or ip.is_link_local or ip.is_unspecified)

    preferred = _default_route_interface(route_table)
    for name in ([preferred] if preferred else []) + sorted(interfaces):
        for address in interfaces.get(name, []):
            if usable(address):
                return address
    return None


def primary_ipv4() -> str | None:
    import psutil

    interfaces = {name: [a.address for a in addresses if a.family == socket.AF_INET]
                  for name, addresses in psutil.net_if_addrs().items()}
    try:
        with open("/proc/net/route", encoding="ascii") as handle:
            routes = handle.read()
    except OSError:
        routes = ""
    return choose_address(interfaces, routes)


def advertise_address(*, advertise: str | None, bind_address: str,
                      host_address: Callable[[], str | None] = primary_ipv4) -> str:
    """--advertise-address, else a specific --bind-address, else the host's primary IPv4 address."""
    if advertise:
        return advertise
    try:
        if not ipaddress.ip_address(bind_address).is_unspecified:
            return bind_address
    except ValueError:
        pass  # a host name: advertise the host's address
    return host_address() or "127.0.0.1"


def reconcile(registry: Registry, *, ip: str, port: int) -> bool:
    """Write the Endpoints and the EndpointSlice where missing or saying something else; True if it wrote."""
    endpoints_written = _reconcile_endpoints(registry, ip=ip, port=port)
    return _reconcile_slice(registry, ip=ip, port=port) or endpoints_written


def _reconcile_slice(registry: Registry, *, ip: str, port: int) -> bool:
    assert ENDPOINT_SLICES is not None
    wanted = master_endpoint_slice(ip, port)
    current = registry.get(ENDPOINT_SLICES, NAMESPACE, NAME)
    if current is None:
        registry.create(ENDPOINT_SLICES, NAMESPACE, wanted)
        return True
    labels = TypedObject(current).metadata.labels
    if (current.get("endpoints") == wanted["endpoints"] and current.get("ports") == wanted["ports"]
            and labels.get(SERVICE_NAME_LABEL) == NAME):
        return False
    wanted["metadata"] = {**current["metadata"], "labels": {**labels, SERVICE_NAME_LABEL: NAME}}
    wanted["metadata"].pop("resourceVersion", None)
    registry.update(ENDPOINT_SLICES, NAMESPACE, NAME, wanted)
    return True


def _reconcile_endpoints(registry: Registry, *, ip: str, port: int) -> bool:
    assert ENDPOINTS is not None
    wanted = master_endpoints(ip, port)
    current = registry.get(ENDPOINTS, NAMESPACE, NAME)
    if current is not None and current.get("subsets") == wanted["subsets"] and \
            TypedObject(current).metadata.labels.get(SKIP_MIRROR_LABEL) == "true":
        return False
    if current is not None:
        labels = {**TypedObject(current).metadata.labels, SKIP_MIRROR_LABEL: "true"}
        wanted["metadata"] = {**current["metadata"], "labels": labels}
        wanted["metadata"].pop("resourceVersion", None)
    registry.update(ENDPOINTS, NAMESPACE, NAME, wanted)
    return True
