"""What a node's routing to the other nodes' pods should be, from the Node objects alone, and what to
change to get there: pure functions, no netlink (netlink.py carries the result out).

Upstream: flannel's backends as k3s runs them (flannel pkg/backend/hostgw/hostgw.go, pkg/backend/vxlan/
vxlan.go and vxlan_network.go, pkg/subnet/kube: the Node's spec.podCIDR is the lease, the backend's facts
ride on Node annotations):
- `host-gw`: per remote node a route of its pod CIDR via its InternalIP. Only works when that address is
  on a subnet this node is directly connected to (flannel's host-gw needs L2 adjacency); any other node
  is refused, with the reason, rather than given a route the kernel would send to the default gateway.
- `vxlan`: one VXLAN device (flannel's `flannel.1`: VNI 1, UDP 8472, no learning, MTU = uplink − 50)
  whose own address is the node's pod CIDR network address /32 (the VTEP address); per remote node an
  FDB entry (its VTEP MAC → its public IP), a permanent neighbour entry (its VTEP address → its VTEP MAC)
  and an onlink route of its pod CIDR via its VTEP address on the device. A node publishes its VTEP MAC
  and public IP in flannel's annotations; a remote node without them is skipped until it has them.
  The packets between nodes are UDP, so nodes on different subnets reach each other's pods.
- `none`: nothing; an external CNI or the operator owns routing.

`diff(desired, present)` gives what to add and what to remove; `present` holds only entries this node
agent made (netlink.py reads routes by their protocol number, FDB and neighbour entries from its own
device), so nothing anyone else made is ever removed.
"""

from __future__ import annotations

import enum
import ipaddress
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

VXLAN_VNI = 1  # flannel's default VNI
VXLAN_PORT = 8472  # flannel's (the Linux default; IANA's 4789 is not used by flannel)
VXLAN_OVERHEAD = 50  # outer IPv4 20 + UDP 8 + VXLAN 8 + inner Ethernet 14
VXLAN_DEVICE = "flannel.1"  # flannel's name: "flannel." + VNI

BACKEND_TYPE_ANNOTATION = "flannel.alpha.coreos.com/backend-type"
BACKEND_DATA_ANNOTATION = "flannel.alpha.coreos.com/backend-data"
PUBLIC_IP_ANNOTATION = "flannel.alpha.coreos.com/public-ip"
SUBNET_MANAGER_ANNOTATION = "flannel.alpha.coreos.com/kube-subnet-manager"


class Backend(enum.Enum):
    VXLAN = "vxlan"
    HOST_GW = "host-gw"
    NONE = "none"


@dataclass(frozen=True)
class RemoteNode:
    """What routing to one other node needs, read from its Node object."""

    name: str
    pod_cidr: str
    internal_ip: str
    public_ip: str = ""  # flannel's public-ip annotation, else the InternalIP
    vtep_mac: str = ""  # from flannel's backend-data annotation; "" before the node published it


@dataclass(frozen=True, order=True)
class Route:
    dst: str  # a pod CIDR
    gateway: str
    device: str = ""  # "" = whichever device reaches the gateway (host-gw)
    onlink: bool = False


@dataclass(frozen=True, order=True)
class Neighbour:
    ip: str
    mac: str
    device: str


@dataclass(frozen=True, order=True)
class FdbEntry:
    mac: str
    dst: str  # the remote node's public IP
    device: str


@dataclass(frozen=True)
class Entries:
    routes: frozenset[Route] = frozenset()
    neighbours: frozenset[Neighbour] = frozenset()
    fdb: frozenset[FdbEntry] = frozenset()

    def __bool__(self) -> bool:
        return bool(self.routes or self.neighbours or self.fdb)


@dataclass(frozen=True)
class Refusal:
    node: str
    reason: str


@dataclass(frozen=True)
class Desired:
    entries: Entries = Entries()
    refused: tuple[Refusal, ...] = field(default_factory=tuple)


@dataclass(frozen=True)
class Changes:
    add: Entries
    remove: Entries


def _annotations(node: Mapping[str, Any]) -> Mapping[str, str]:
    return (node.get("metadata") or {}).get("annotations") or {}


def vtep_mac_of(node: Mapping[str, Any]) -> str:
    """The VtepMAC of flannel's backend-data annotation ("" when absent or not JSON)."""
    try:
        data = json.loads(_annotations(node).get(BACKEND_DATA_ANNOTATION) or "null")
    except ValueError:
        return ""
    return str(data.get("VtepMAC") or "") if isinstance(data, dict) else ""


def internal_ip_of(node: Mapping[str, Any]) -> str:
    for address in (node.get("status") or {}).get("addresses") or []:
        if address.get("type") == "InternalIP" and address.get("address"):
            return str(address["address"])
    return ""


def remote_nodes(nodes: Iterable[Mapping[str, Any]], *, self_name: str) -> list[RemoteNode]:
    """Every other Node with a pod CIDR and an InternalIP, by name."""
    found = []
    for node in nodes:
        name = (node.get("metadata") or {}).get("name") or ""
        cidr = (node.get("spec") or {}).get("podCIDR") or ""
        ip = internal_ip_of(node)
        if name == self_name or not cidr or not ip:
            continue
        found.append(RemoteNode(name=name, pod_cidr=cidr, internal_ip=ip,
                                public_ip=_annotations(node).get(PUBLIC_IP_ANNOTATION) or ip,
                                vtep_mac=vtep_mac_of(node)))
    return sorted(found, key=lambda r: r.name)


def vtep_address(pod_cidr: str) -> str:
    """A node's VTEP address: its pod CIDR's network address, as flannel gives flannel.1 (a /32)."""
    return str(ipaddress.ip_network(pod_cidr, strict=False).network_address)


def host_gw(remotes: Sequence[RemoteNode], *, connected: Sequence[str]) -> Desired:
    """Routes via each remote node's InternalIP; nodes not on a `connected` subnet are refused."""
    networks = [ipaddress.ip_network(c, strict=False) for c in connected]
    routes, refused = set(), []
    for remote in remotes:
        if any(ipaddress.ip_address(remote.internal_ip) in net for net in networks):
            routes.add(Route(dst=remote.pod_cidr, gateway=remote.internal_ip))
        else:
            refused.append(Refusal(remote.name, f"host-gw: node {remote.name}'s InternalIP {remote.internal_ip} is "
                                   f"not on a directly connected subnet ({', '.join(connected) or 'none'}); "
                                   "its pods are unreachable from here: use --pod-network vxlan"))
    return Desired(Entries(routes=frozenset(routes)), tuple(refused))


def vxlan(remotes: Sequence[RemoteNode], *, device: str = VXLAN_DEVICE) -> Desired:
    """FDB, neighbour and onlink route per remote node that published its VTEP MAC."""
    routes, neighbours, fdb = set(), set(), set()
    for remote in remotes:
        if not remote.vtep_mac:
            continue
        vtep = vtep_address(remote.pod_cidr)
        routes.add(Route(dst=remote.pod_cidr, gateway=vtep, device=device, onlink=True))
        neighbours.add(Neighbour(ip=vtep, mac=remote.vtep_mac, device=device))
        fdb.add(FdbEntry(mac=remote.vtep_mac, dst=remote.public_ip, device=device))
    return Desired(Entries(frozenset(routes), frozenset(neighbours), frozenset(fdb)))


def desired(backend: Backend, remotes: Sequence[RemoteNode], *, connected: Sequence[str] = (),
            device: str = VXLAN_DEVICE) -> Desired:
    if backend is Backend.HOST_GW:
        return host_gw(remotes, connected=connected)
    if backend is Backend.VXLAN:
        return vxlan(remotes, device=device)
    return Desired()


def diff(want: Entries, present: Entries) -> Changes:
    """What to add (wanted, not present) and remove (present, not wanted); a route to the same pod CIDR
    through another gateway is a removal and an add (a node that changed address)."""
    return Changes(add=Entries(want.routes - present.routes, want.neighbours - present.neighbours,
                               want.fdb - present.fdb),
                   remove=Entries(present.routes - want.routes, present.neighbours - want.neighbours,
                                  present.fdb - want.fdb))


def node_annotations(backend: Backend, *, public_ip: str, vtep_mac: str = "") -> dict[str, str]:
    """The annotations a node publishes about itself (flannel's names and values)."""
    if backend is Backend.NONE:
        return {}
    data = json.dumps({"VNI": VXLAN_VNI, "VtepMAC": vtep_mac}, separators=(",", ":")) \
        if backend is Backend.VXLAN else "null"
    return {BACKEND_TYPE_ANNOTATION: backend.value, BACKEND_DATA_ANNOTATION: data,
            PUBLIC_IP_ANNOTATION: public_ip, SUBNET_MANAGER_ANNOTATION: "true"}
