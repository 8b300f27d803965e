"""The node's routes, neighbour and FDB entries towards other nodes' pods, over netlink with pyroute2:
read what this agent made, apply a `desired.Changes`, make the VXLAN device, remove it all.

What counts as ours (the only entries ever read back as present, hence the only ones ever removed):
routes of the main table with protocol `ROUTE_PROTOCOL` (no other software on a node uses that number;
`ip route` shows it as `proto 86`), and the permanent neighbour and FDB entries with a destination on our
VXLAN device, which this agent creates and owns. The VXLAN device is made as flannel makes `flannel.1`
(VNI 1, UDP 8472, no learning, local = the node's public IP on its uplink, MTU = uplink's − 50) with
the VTEP address /32; a device of that name with other settings is replaced.

Upstream: flannel pkg/backend/vxlan/device.go (`newVXLANDevice`, `AddARP`, `AddFDB`, `DelARP`, `DelFDB`)
and pkg/backend/hostgw / pkg/backend/route_network.go (routes added and removed per subnet lease event);
flannel does not mark its routes, here the protocol number does, so a restart can tell ours from others'.
"""

from __future__ import annotations

import errno
import ipaddress
import socket
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pyroute2 import IPRoute
from pyroute2.netlink.exceptions import NetlinkError
from pyroute2.netlink.rtnl.ndmsg import NUD_PERMANENT

from nodeagent.network.backends.desired import (
    VXLAN_OVERHEAD,
    VXLAN_PORT,
    VXLAN_VNI,
    Changes,
    Entries,
    FdbEntry,
    Neighbour,
    Route,
)

ROUTE_PROTOCOL = 86  # rtm_protocol of every route this agent makes
RTNH_F_ONLINK = 4
MAIN_TABLE = 254


class RoutingError(RuntimeError):
    """A netlink call failed; the message says which entry."""


@dataclass(frozen=True)
class VxlanDevice:
    name: str
    index: int
    mac: str
    mtu: int


def _ignore(codes: tuple[int, ...], call: Callable[..., Any], *args: Any, **kwargs: Any) -> None:
    """`call(*args, **kwargs)`, an error with one of `codes` (already there, already gone) being success."""
    try:
        call(*args, **kwargs)
    except NetlinkError as exc:
        if exc.code not in codes:
            raise


class NetlinkRoutes:
    """The netlink side of the pod network backends, in one network namespace (None: this process's)."""

    def __init__(self, *, netns: str | None = None) -> None:
        self._netns = netns

    def _ipr(self) -> IPRoute:
        return IPRoute(netns=self._netns) if self._netns else IPRoute()

    def connected(self) -> list[str]:
        """The subnets of this namespace's addresses (host routes and loopback left out)."""
        with self._ipr() as ipr:
            return sorted({str(ipaddress.ip_interface(f"{a.get('IFA_ADDRESS')}/{a['prefixlen']}").network)
                           for a in ipr.get_addr(family=socket.AF_INET)
                           if a["prefixlen"] < 32 and not str(a.get("IFA_ADDRESS")).startswith("127.")})

    def uplink(self, public_ip: str) -> tuple[int, int]:
        """(ifindex, MTU) of the device holding `public_ip`."""
        with self._ipr() as ipr:
            for address in ipr.get_addr(family=socket.AF_INET):
                if address.get("IFA_ADDRESS") == public_ip:
                    (link,) = ipr.get_links(address["index"])
                    return address["index"], int(link.get("IFLA_MTU"))
        raise RoutingError(f"no device holds the node's address {public_ip}: cannot make the VXLAN device")

    def ensure_vxlan(self, name: str, *, public_ip: str, vtep: str) -> VxlanDevice:
        """Make (or keep, or replace a mismatched) VXLAN device `name` with address `vtep`/32, up."""
        uplink, uplink_mtu = self.uplink(public_ip)
        mtu = uplink_mtu - VXLAN_OVERHEAD
        with self._ipr() as ipr:
            found = ipr.link_lookup(ifname=name)
            if found:
                (link,) = ipr.get_links(found[0])
                data = link.get_nested("IFLA_LINKINFO", "IFLA_INFO_DATA")
                kind = link.get_nested("IFLA_LINKINFO", "IFLA_INFO_KIND")
                if kind != "vxlan" or data is None or (data.get("IFLA_VXLAN_ID"), data.get("IFLA_VXLAN_LOCAL"),
                                                       data.get("IFLA_VXLAN_PORT"), data.get("IFLA_VXLAN_LINK")) != (
                        VXLAN_VNI, public_ip, VXLAN_PORT, uplink):
                    ipr.link("del", index=found[0])
                    found = []
            if not found:
                ipr.link("add", ifname=name, kind="vxlan", vxlan_id=VXLAN_VNI, vxlan_port=VXLAN_PORT,
                         vxlan_local=public_ip, vxlan_link=uplink, vxlan_learning=0, mtu=mtu)
                found = ipr.link_lookup(ifname=name)
            index = found[0]
            for address in ipr.get_addr(index=index, family=socket.AF_INET):
                if (address.get("IFA_ADDRESS"), address["prefixlen"]) != (vtep, 32):
                    ipr.addr("del", index=index, address=address.get("IFA_ADDRESS"), prefixlen=address["prefixlen"])
            _ignore((errno.EEXIST,), ipr.addr, "add", index=index, address=vtep, prefixlen=32)
            ipr.link("set", index=index, state="up", mtu=mtu)
            (link,) = ipr.get_links(index)
            return VxlanDevice(name=name, index=index, mac=str(link.get("IFLA_ADDRESS")), mtu=mtu)

    def present(self, device: str) -> Entries:
        """The entries this agent made (module notes)."""
        with self._ipr() as ipr:
            found = ipr.link_lookup(ifname=device)
            vxlan_index = found[0] if found else None
            routes = set()
            for route in ipr.get_routes(family=socket.AF_INET, proto=ROUTE_PROTOCOL, table=MAIN_TABLE):
                on_device = vxlan_index is not None and route.get("RTA_OIF") == vxlan_index
                routes.add(Route(dst=f"{route.get('RTA_DST')}/{route['dst_len']}",
                                 gateway=str(route.get("RTA_GATEWAY") or ""),
                                 device=device if on_device else "", onlink=bool(route["flags"] & RTNH_F_ONLINK)))
            if vxlan_index is None:
                return Entries(routes=frozenset(routes))
            neighbours = {Neighbour(ip=str(n.get("NDA_DST")), mac=str(n.get("NDA_LLADDR")), device=device)
                          for n in ipr.get_neighbours(ifindex=vxlan_index, family=socket.AF_INET)
                          if n["state"] & NUD_PERMANENT and n.get("NDA_LLADDR")}
            fdb = {FdbEntry(mac=str(f.get("NDA_LLADDR")), dst=str(f.get("NDA_DST")), device=device)
                   for f in ipr.fdb("dump", ifindex=vxlan_index) if f.get("NDA_DST")}
        return Entries(frozenset(routes), frozenset(neighbours), frozenset(fdb))

    def apply(self, changes: Changes) -> None:
        """Removals first (a node that changed address frees its pod CIDR's route), then additions."""
        with self._ipr() as ipr:
            def index(device: str) -> int:
                found = ipr.link_lookup(ifname=device)
                if not found:
                    raise RoutingError(f"device {device} is gone")
                return int(found[0])

            gone = (errno.ESRCH, errno.ENOENT, errno.ENODEV)
            for route in sorted(changes.remove.routes):
                _ignore(gone, ipr.route, "del", dst=route.dst, gateway=route.gateway, proto=ROUTE_PROTOCOL,
                        table=MAIN_TABLE)
            for neighbour in sorted(changes.remove.neighbours):
                _ignore(gone, ipr.neigh, "del", dst=neighbour.ip, lladdr=neighbour.mac,
                        ifindex=index(neighbour.device))
            for entry in sorted(changes.remove.fdb):
                _ignore(gone, ipr.fdb, "del", ifindex=index(entry.device), lladdr=entry.mac, dst=entry.dst)
            for entry in sorted(changes.add.fdb):
                _ignore((errno.EEXIST,), ipr.fdb, "append", ifindex=index(entry.device), lladdr=entry.mac,
                        dst=entry.dst, state=NUD_PERMANENT)
            for neighbour in sorted(changes.add.neighbours):
                ipr.neigh("replace", dst=neighbour.ip, lladdr=neighbour.mac, ifindex=index(neighbour.device),
                          state=NUD_PERMANENT)
            for route in sorted(changes.add.routes):
                extra = {"oif": index(route.device)} if route.device else {}
                try:
                    ipr.route("replace", dst=route.dst, gateway=route.gateway, proto=ROUTE_PROTOCOL,
                              table=MAIN_TABLE, flags=RTNH_F_ONLINK if route.onlink else 0, **extra)
                except NetlinkError as exc:
                    raise RoutingError(f"route {route.dst} via {route.gateway}: {exc}") from exc

    def remove_all(self, device: str) -> None:
        """Every route this agent made, and its VXLAN device (with the FDB and neighbour entries on it)."""
        present = self.present(device)
        self.apply(Changes(add=Entries(), remove=Entries(routes=present.routes)))
        with self._ipr() as ipr:
            for index in ipr.link_lookup(ifname=device):
                _ignore((errno.ENODEV,), ipr.link, "del", index=index)
